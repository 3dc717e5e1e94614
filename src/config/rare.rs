//! [`Rare`]: a group of settings a keepalived.conf seldom gives, kept
//! behind one pointer (none until one of them is set), so that a record
//! held per real server or per checker (tens of thousands) pays eight
//! bytes for them instead of their size. Part of the model
//! ([`super::model`]); reads see the group's defaults when it is unset,
//! and it serialises as the group itself would, set or not.

use serde::{Serialize, Serializer};
use std::ops::Deref;

/// A group's value when none of it is set, for reads through [`Rare`].
pub trait Unset: Default + 'static {
    /// The group with nothing set.
    fn unset() -> &'static Self;
}

/// A seldom-set group of settings `T`, boxed when set.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rare<T>(Option<Box<T>>);

impl<T> Default for Rare<T> {
    fn default() -> Self {
        Rare(None)
    }
}

impl<T: Unset> Rare<T> {
    /// The group to set a field of (made on the first).
    pub fn set(&mut self) -> &mut T {
        self.0.get_or_insert_with(Box::default)
    }

    /// Whether any of the group was set.
    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }
}

impl<T: Unset> Deref for Rare<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_deref().unwrap_or_else(|| T::unset())
    }
}

impl<T: Unset + Serialize> Serialize for Rare<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Clone, PartialEq, Eq, Hash, Serialize)]
    struct G {
        a: Option<u32>,
        b: Option<Box<str>>,
    }
    impl Unset for G {
        fn unset() -> &'static G {
            static G0: G = G { a: None, b: None };
            &G0
        }
    }
    #[derive(Serialize)]
    struct Outer {
        x: u8,
        #[serde(flatten)]
        g: Rare<G>,
        y: u8,
    }

    #[test]
    fn reads_defaults_until_set_and_serialises_the_same_either_way() {
        let mut r: Rare<G> = Rare::default();
        assert_eq!(r.a, None);
        assert!(!r.is_set());
        let o = Outer {
            x: 1,
            g: r.clone(),
            y: 2,
        };
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"x":1,"a":null,"b":null,"y":2}"#
        );
        r.set().a = Some(7);
        assert!(r.is_set());
        assert_eq!((r.a, r.b.as_deref()), (Some(7), None));
        let o = Outer { x: 1, g: r, y: 2 };
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"x":1,"a":7,"b":null,"y":2}"#
        );
        assert_eq!(std::mem::size_of::<Rare<G>>(), 8);
    }
}
