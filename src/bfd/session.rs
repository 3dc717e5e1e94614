//! One BFD session as keepalived 2.2.7 runs it (RFC 5880 §6.8, with the
//! peculiarities `../shared/reference/bfd.md` §5.4–5.5 lists): the state
//! machine on received packets, the transmit and detection timers, the
//! poll sequence. Pure: the time (µs on any monotonic clock) and the
//! randomness come in, packets to send and state changes go out.

use super::packet::{Control, Diag, State};

/// A session's configured timers (`bfd_instance`), µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// `min_tx`: Desired Min TX while Up.
    pub min_tx: u32,
    /// `min_rx`: Required Min RX.
    pub min_rx: u32,
    /// `idle_tx`: Desired Min TX while not Up.
    pub idle_tx: u32,
    /// `multiplier`: Detect Mult.
    pub mult: u8,
    /// `passive`: silent until the peer speaks.
    pub passive: bool,
}

/// What the session needs of chance.
pub trait Random {
    /// A new local discriminator (never 0).
    fn discriminator(&mut self) -> u32;
    /// How much of a transmit interval of `us` to cut: keepalived cuts
    /// 10–25 % (RFC 5880 §6.8.7 allows 0–25 %, 10–25 % at Detect Mult 1).
    fn jitter(&mut self, us: u64) -> u64;
}

/// What a step of the session asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Send this packet to the neighbour.
    Send(Control),
    /// The session's state changed; `notify` is false where keepalived
    /// tells nobody (a neighbour that went AdminDown).
    Changed {
        /// Before.
        from: State,
        /// After.
        to: State,
        /// Why, as the session's own diagnostic says.
        diag: Diag,
        /// Whether VRRP and the checker hear of it.
        notify: bool,
    },
}

/// One session.
#[derive(Debug, Clone)]
pub struct Session {
    params: Params,
    state: State,
    diag: Diag,
    local_disc: u32,
    remote_disc: u32,
    remote_min_rx: u32,
    remote_desired_min_tx: u32,
    remote_mult: u8,
    /// The neighbour's state and diagnostic as its last packet said.
    remote_state: State,
    remote_diag: Diag,
    /// P on every packet until an F comes back.
    poll: bool,
    /// A packet with F goes out at once.
    final_due: bool,
    /// The transmit interval in force, µs (before jitter).
    tx_interval: u64,
    /// Next periodic packet; `None` while silent (passive, or Down after
    /// being passive).
    tx_at: Option<u64>,
    /// Detection expiry.
    detect_at: Option<u64>,
    /// When the remote fields are forgotten after a Down.
    reset_at: Option<u64>,
}

impl Session {
    /// A session starting Down at `now`: an active one sends its first
    /// packet at once.
    pub fn new(params: Params, now: u64, rng: &mut impl Random) -> Session {
        let mut s = Session {
            params,
            state: State::Down,
            diag: Diag::NONE,
            local_disc: rng.discriminator(),
            remote_disc: 0,
            remote_min_rx: 1,
            remote_desired_min_tx: 0,
            remote_mult: 0,
            remote_state: State::Down,
            remote_diag: Diag::NONE,
            poll: false,
            final_due: false,
            tx_interval: 0,
            tx_at: (!params.passive).then_some(now),
            detect_at: None,
            reset_at: None,
        };
        s.tx_interval = s.compute_tx_interval();
        s
    }

    /// The state.
    pub fn state(&self) -> State {
        self.state
    }

    /// The local discriminator (how the neighbour's packets find us).
    pub fn local_disc(&self) -> u32 {
        self.local_disc
    }

    /// The detection time in force, µs: the neighbour's Detect Mult times
    /// the slower of our Required Min RX and its Desired Min TX.
    pub fn detection_time(&self) -> u64 {
        u64::from(self.remote_mult) * u64::from(self.params.min_rx.max(self.remote_desired_min_tx))
    }

    /// Our Desired Min TX now: `min_tx` when Up, `idle_tx` otherwise.
    fn desired_min_tx(&self) -> u32 {
        if self.state == State::Up {
            self.params.min_tx
        } else {
            self.params.idle_tx
        }
    }

    fn compute_tx_interval(&self) -> u64 {
        u64::from(self.desired_min_tx().max(self.remote_min_rx))
    }

    /// The transmit interval recomputed at `now`; a shorter one takes
    /// effect at once (RFC 5880 §6.8.3: only increases wait).
    fn retime(&mut self, now: u64) {
        let new = self.compute_tx_interval();
        if new < self.tx_interval {
            self.tx_at = self.tx_at.map(|t| t.min(now + new));
        }
        self.tx_interval = new;
    }

    /// A reload's timers for this session (keepalived keeps the session's
    /// state across a reload): a changed `min_rx` or `min_tx` starts a poll
    /// sequence, a changed multiplier alone does not.
    pub fn set_params(&mut self, now: u64, p: Params) {
        let poll = p.min_rx != self.params.min_rx || p.min_tx != self.params.min_tx;
        self.params = p;
        if poll && self.state == State::Up {
            self.poll = true;
        }
        self.retime(now);
    }

    /// The packet the session sends now.
    pub fn packet(&self) -> Control {
        Control {
            diag: self.diag,
            state: self.state,
            // A Final due carries the new values and drops the Poll.
            poll: self.poll && !self.final_due,
            fin: self.final_due,
            cpi: false,
            demand: false,
            detect_mult: self.params.mult,
            my_disc: self.local_disc,
            your_disc: self.remote_disc,
            desired_min_tx: self.desired_min_tx(),
            required_min_rx: self.params.min_rx,
            required_min_echo_rx: 0,
        }
    }

    /// When [`Session::timers`] has work next.
    pub fn next_deadline(&self) -> Option<u64> {
        [self.tx_at, self.detect_at, self.reset_at]
            .into_iter()
            .flatten()
            .min()
    }

    fn enter(
        &mut self,
        now: u64,
        (to, diag, notify): (State, Diag, bool),
        rng: &mut impl Random,
        out: &mut Vec<Output>,
    ) {
        let from = self.state;
        if from == to {
            return;
        }
        self.state = to;
        match to {
            State::Init | State::Up => {
                self.diag = Diag::NONE;
                self.reset_at = None;
                if self.detect_at.is_none() {
                    self.detect_at = Some(now + self.detection_time());
                }
                if self.tx_at.is_none() {
                    // A passive session speaks from Init on.
                    self.tx_at = Some(now);
                }
                if to == State::Up && self.params.idle_tx != self.params.min_tx {
                    self.poll = true;
                }
            }
            State::Down | State::AdminDown => {
                self.diag = diag;
                if from == State::Up {
                    // keepalived takes a new discriminator at every loss.
                    let mut d = rng.discriminator();
                    while d == self.local_disc || d == 0 {
                        d = rng.discriminator();
                    }
                    self.local_disc = d;
                }
                self.detect_at = None;
                self.poll = false;
                if self.params.passive {
                    self.tx_at = None;
                }
            }
        }
        self.retime(now);
        out.push(Output::Changed {
            from,
            to,
            diag: self.diag,
            notify,
        });
    }

    /// A packet from the neighbour (already through [`Control::decode`]
    /// and found to be for this session).
    pub fn receive(&mut self, now: u64, c: &Control, rng: &mut impl Random, out: &mut Vec<Output>) {
        if self.state == State::AdminDown {
            return;
        }
        let was_up = self.state == State::Up;
        self.remote_disc = c.my_disc;
        self.remote_min_rx = c.required_min_rx.max(1);
        self.remote_desired_min_tx = c.desired_min_tx;
        self.remote_mult = c.detect_mult;
        self.remote_state = c.state;
        self.remote_diag = c.diag;
        if c.fin {
            self.poll = false;
        }
        match (self.state, c.state) {
            (State::Down, State::Down) => {
                self.enter(now, (State::Init, Diag::NONE, true), rng, out)
            }
            (State::Down, State::Init) | (State::Init, State::Init | State::Up) => {
                self.enter(now, (State::Up, Diag::NONE, true), rng, out)
            }
            (State::Init | State::Up, State::AdminDown) => {
                // RFC 5882 §4.2: a neighbour going AdminDown is no failure.
                let to = (State::Down, Diag::NEIGHBOR_SIGNALED_DOWN, false);
                self.enter(now, to, rng, out);
                self.reset_at = Some(now + self.detection_time());
            }
            (State::Up, State::Down) => {
                let to = (State::Down, Diag::NEIGHBOR_SIGNALED_DOWN, true);
                self.enter(now, to, rng, out);
                self.reset_at = Some(now + self.detection_time());
            }
            _ => {}
        }
        // The neighbour's values take effect at once while not Up, and
        // through a poll sequence (P or F) while Up.
        if self.state != State::Up || !was_up || c.poll || c.fin {
            self.retime(now);
        }
        // Only Up refreshes the detection timer (keepalived lets Init
        // expire one detection time after it was entered).
        if self.state == State::Up {
            self.detect_at = Some(now + self.detection_time());
        }
        if c.poll {
            self.final_due = true;
        }
    }

    /// What is due at `now`: a detection expiry, the forgetting of the
    /// remote fields, a Final, the periodic packet.
    pub fn timers(&mut self, now: u64, rng: &mut impl Random, out: &mut Vec<Output>) {
        if self.detect_at.is_some_and(|t| t <= now) {
            let to = (State::Down, Diag::DETECTION_TIME_EXPIRED, true);
            self.enter(now, to, rng, out);
            self.forget_remote(now);
        }
        if self.reset_at.is_some_and(|t| t <= now) {
            self.forget_remote(now);
        }
        if self.final_due {
            out.push(Output::Send(self.packet()));
            self.final_due = false;
            // The Final carried our values: our own Poll is dropped.
            self.poll = false;
        }
        if self.tx_at.is_some_and(|t| t <= now) {
            out.push(Output::Send(self.packet()));
            let cut = rng.jitter(self.tx_interval).min(self.tx_interval / 4);
            self.tx_at = Some(now + (self.tx_interval - cut).max(1));
        }
    }

    fn forget_remote(&mut self, now: u64) {
        self.reset_at = None;
        self.remote_disc = 0;
        self.remote_min_rx = 1;
        self.remote_desired_min_tx = 0;
        self.remote_state = State::Down;
        self.remote_diag = Diag::NONE;
        self.retime(now);
    }

    /// Held down locally (keepalived: its send socket cannot be opened):
    /// nothing is sent, received packets are passed over.
    pub fn admin_down(&mut self, now: u64, out: &mut Vec<Output>, rng: &mut impl Random) {
        let to = (State::AdminDown, Diag::ADMIN_DOWN, false);
        self.enter(now, to, rng, out);
        self.tx_at = None;
        self.forget_remote(now);
    }

    /// Out of [`Session::admin_down`] (its socket open at last): Down, and
    /// transmitting unless passive.
    pub fn resume(&mut self, now: u64) {
        if self.state == State::AdminDown {
            self.state = State::Down;
            self.diag = Diag::NONE;
            if !self.params.passive {
                self.tx_at = Some(now);
            }
            self.retime(now);
        }
    }

    /// The session's timers.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The local diagnostic.
    pub fn diag(&self) -> Diag {
        self.diag
    }

    /// The neighbour's state and diagnostic as its last packet said.
    pub fn remote(&self) -> (State, Diag) {
        (self.remote_state, self.remote_diag)
    }

    /// The neighbour's discriminator (0 until learnt, and after a reset).
    pub fn remote_disc(&self) -> u32 {
        self.remote_disc
    }

    /// The neighbour's Desired Min TX, Required Min RX (µs) and Detect Mult.
    pub fn remote_timers(&self) -> (u32, u32, u8) {
        (
            self.remote_desired_min_tx,
            self.remote_min_rx,
            self.remote_mult,
        )
    }

    /// The transmit interval in force, µs (before jitter).
    pub fn tx_interval(&self) -> u64 {
        self.tx_interval
    }

    /// When the detection timer expires, if it runs.
    pub fn detect_at(&self) -> Option<u64> {
        self.detect_at
    }

    /// A poll sequence is running (P on every packet).
    pub fn polling(&self) -> bool {
        self.poll
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Discriminators counted up from a seed; every cut 15 %.
    struct Counter(u32);

    impl Random for Counter {
        fn discriminator(&mut self) -> u32 {
            self.0 += 1;
            self.0
        }
        fn jitter(&mut self, us: u64) -> u64 {
            us * 15 / 100
        }
    }

    const P: Params = Params {
        min_tx: 100_000,
        min_rx: 100_000,
        idle_tx: 1_000_000,
        mult: 3,
        passive: false,
    };

    /// Two sessions on a link with 1 ms of delay, A from `t = 0`, B from
    /// `b_at`; run until `until`, B silent from `b_mute`. Returns every
    /// packet sent (time, sender, packet) and every change (time, side).
    struct Link {
        a: Session,
        b: Option<Session>,
        sent: Vec<(u64, char, Control)>,
        changes: Vec<(u64, char, Output)>,
        wire: Vec<(u64, char, Control)>,
        rng: Counter,
    }

    impl Link {
        fn new(pa: Params) -> Link {
            let mut rng = Counter(0x100);
            Link {
                a: Session::new(pa, 0, &mut rng),
                b: None,
                sent: Vec::new(),
                changes: Vec::new(),
                wire: Vec::new(),
                rng,
            }
        }

        fn run(&mut self, b_at: u64, pb: Params, until: u64, b_mute: u64) {
            self.steps(0, Some((b_at, pb)), until, b_mute);
        }

        fn run_from(&mut self, from: u64, until: u64) {
            self.steps(from, None, until, u64::MAX);
        }

        fn steps(&mut self, from: u64, b: Option<(u64, Params)>, until: u64, b_mute: u64) {
            let mut now = from;
            while now <= until {
                if let Some((b_at, pb)) = b {
                    if self.b.is_none() && now >= b_at {
                        self.b = Some(Session::new(pb, now, &mut self.rng));
                    }
                }
                // Deliveries due.
                let (due, later): (Vec<_>, Vec<_>) =
                    self.wire.drain(..).partition(|(t, _, _)| *t <= now);
                self.wire = later;
                for (_, to, c) in due {
                    let mut out = Vec::new();
                    match to {
                        'A' => self.a.receive(now, &c, &mut self.rng, &mut out),
                        _ => {
                            if let Some(b) = self.b.as_mut() {
                                b.receive(now, &c, &mut self.rng, &mut out)
                            }
                        }
                    }
                    self.take(now, to, out, b_mute);
                }
                let mut out = Vec::new();
                self.a.timers(now, &mut self.rng, &mut out);
                self.take(now, 'A', out, b_mute);
                if let Some(b) = self.b.as_mut() {
                    let mut out = Vec::new();
                    b.timers(now, &mut self.rng, &mut out);
                    self.take(now, 'B', out, b_mute);
                }
                now += 1_000;
            }
        }

        fn take(&mut self, now: u64, side: char, out: Vec<Output>, b_mute: u64) {
            for o in out {
                match o {
                    Output::Send(c) => {
                        self.sent.push((now, side, c));
                        if side == 'B' && now >= b_mute {
                            continue;
                        }
                        let to = if side == 'A' { 'B' } else { 'A' };
                        self.wire.push((now + 1_000, to, c));
                    }
                    ch => self.changes.push((now, side, ch)),
                }
            }
        }
    }

    fn flags(c: &Control) -> &'static str {
        match (c.poll, c.fin) {
            (true, _) => "P",
            (_, true) => "F",
            _ => "-",
        }
    }

    #[test]
    fn two_sessions_come_up_as_keepalived_s_do() {
        let mut l = Link::new(P);
        l.run(500_000, P, 3_000_000, u64::MAX);
        // The distinct packets in order, as in ka-ka-ipv4-down-init-up.
        let mut seen: Vec<(char, State, &str, u32)> = Vec::new();
        for (_, side, c) in &l.sent {
            let k = (*side, c.state, flags(c), c.desired_min_tx);
            if !seen.contains(&k) {
                seen.push(k);
            }
        }
        assert_eq!(
            seen,
            [
                ('A', State::Down, "-", 1_000_000),
                ('B', State::Down, "-", 1_000_000),
                ('A', State::Init, "-", 1_000_000),
                ('B', State::Up, "P", 100_000),
                ('A', State::Up, "F", 100_000),
                ('B', State::Up, "-", 100_000),
                ('A', State::Up, "-", 100_000),
            ]
        );
        // A's Init went out at its next timer, not at once; its Final at
        // once (within the link's delay of B's Poll).
        let first = |side: char, f: &dyn Fn(&Control) -> bool| {
            l.sent
                .iter()
                .find(|(_, s, c)| *s == side && f(c))
                .map(|x| x.0)
                .unwrap()
        };
        let b_down = first('B', &|c| c.state == State::Down);
        let a_init = first('A', &|c| c.state == State::Init);
        assert!(a_init > b_down + 1_000, "{b_down} {a_init}");
        let b_poll = first('B', &|c| c.poll);
        let a_final = first('A', &|c| c.fin);
        assert_eq!(a_final, b_poll + 1_000);
        assert_eq!(
            (l.a.state(), l.b.as_ref().unwrap().state()),
            (State::Up, State::Up)
        );
        assert_eq!(l.a.detection_time(), 300_000);
        // Steady Up: 100 ms less 15 %, every packet.
        let gaps: Vec<u64> = l
            .sent
            .iter()
            .filter(|(t, s, _)| *s == 'A' && *t > 2_000_000)
            .map(|x| x.0)
            .collect::<Vec<_>>()
            .windows(2)
            .map(|w| w[1] - w[0])
            .collect();
        assert!(gaps.iter().all(|g| *g == 85_000), "{gaps:?}");
    }

    #[test]
    fn a_silent_neighbour_is_detected_after_the_detection_time() {
        let mut l = Link::new(P);
        l.run(500_000, P, 4_000_000, 3_000_000);
        let last_b = l
            .sent
            .iter()
            .filter(|(t, s, _)| *s == 'B' && *t < 3_000_000)
            .map(|x| x.0)
            .max()
            .unwrap();
        let down = l
            .changes
            .iter()
            .find_map(|(t, s, o)| match o {
                Output::Changed {
                    to: State::Down,
                    diag,
                    notify,
                    ..
                } if *s == 'A' => Some((*t, *diag, *notify)),
                _ => None,
            })
            .unwrap();
        // Arrived 1 ms after it was sent; expired 300 ms after that.
        assert_eq!(down.0, last_b + 1_000 + 300_000);
        assert_eq!((down.1, down.2), (Diag::DETECTION_TIME_EXPIRED, true));
        // The next packet: Down, diag 1, a new discriminator, your 0, idle.
        let up_disc = l
            .sent
            .iter()
            .rev()
            .find(|(_, s, c)| *s == 'A' && c.state == State::Up)
            .unwrap()
            .2
            .my_disc;
        let next = l
            .sent
            .iter()
            .find(|(t, s, _)| *s == 'A' && *t >= down.0)
            .unwrap()
            .2;
        assert_eq!(next.state, State::Down);
        assert_eq!(next.diag, Diag::DETECTION_TIME_EXPIRED);
        assert_ne!(next.my_disc, up_disc);
        assert_eq!((next.your_disc, next.desired_min_tx), (0, 1_000_000));
    }

    #[test]
    fn a_neighbour_going_admin_down_takes_the_session_down_unannounced() {
        let mut rng = Counter(7);
        let mut a = Session::new(P, 0, &mut rng);
        let mut out = Vec::new();
        let peer = |state, your| Control {
            diag: Diag::NONE,
            state,
            poll: false,
            fin: false,
            cpi: false,
            demand: false,
            detect_mult: 3,
            my_disc: 0xabc,
            your_disc: your,
            desired_min_tx: 300_000,
            required_min_rx: 100_000,
            required_min_echo_rx: 50_000,
        };
        a.receive(
            1_000,
            &peer(State::Init, a.local_disc()),
            &mut rng,
            &mut out,
        );
        assert_eq!(a.state(), State::Up);
        out.clear();
        a.receive(
            2_000,
            &peer(State::AdminDown, a.local_disc()),
            &mut rng,
            &mut out,
        );
        assert_eq!(
            out,
            [Output::Changed {
                from: State::Up,
                to: State::Down,
                diag: Diag::NEIGHBOR_SIGNALED_DOWN,
                notify: false
            }]
        );
        // Its discriminator is still known (frr-ipv4-admindown), until the
        // reset time.
        assert_eq!(a.packet().your_disc, 0xabc);
        assert_eq!(a.packet().diag, Diag::NEIGHBOR_SIGNALED_DOWN);
        let mut out = Vec::new();
        a.timers(2_000 + 900_000, &mut rng, &mut out);
        assert_eq!(a.packet().your_disc, 0);
    }

    #[test]
    fn a_reload_with_new_timers_polls_with_them() {
        let mut l = Link::new(P);
        l.run(500_000, P, 3_000_000, u64::MAX);
        let slower = Params {
            min_rx: 200_000,
            min_tx: 250_000,
            ..P
        };
        let t = 3_001_000;
        l.b.as_mut().unwrap().set_params(t, slower);
        let from = l.sent.len();
        l.run_from(t, 4_000_000);
        // As in ka-ka-ipv4-poll-final-reload: B Up+P with the new values,
        // A's Final at once, then B without flags.
        let b: Vec<(&str, u32, u32)> = l.sent[from..]
            .iter()
            .filter(|(_, s, _)| *s == 'B')
            .map(|(_, _, c)| (flags(c), c.desired_min_tx, c.required_min_rx))
            .collect();
        assert_eq!(b[0], ("P", 250_000, 200_000), "{b:?}");
        assert_eq!(*b.last().unwrap(), ("-", 250_000, 200_000), "{b:?}");
        let a_final = l.sent[from..]
            .iter()
            .filter(|(_, s, c)| *s == 'A' && c.fin)
            .count();
        assert_eq!(a_final, 1);
        // A detects B at 3 x its new Desired Min TX.
        assert_eq!(l.a.detection_time(), 3 * 250_000);
        assert_eq!(l.a.state(), State::Up);
    }

    #[test]
    fn a_passive_session_speaks_only_once_spoken_to() {
        let passive = Params { passive: true, ..P };
        let mut l = Link::new(passive);
        l.run(2_000_000, P, 3_500_000, u64::MAX);
        let first_a = l.sent.iter().find(|(_, s, _)| *s == 'A').unwrap();
        assert!(
            first_a.0 > 2_000_000,
            "silent before B spoke: {}",
            first_a.0
        );
        assert_eq!(first_a.2.state, State::Init);
        assert_eq!(l.a.state(), State::Up);
    }
}
