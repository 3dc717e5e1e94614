echo b > /tmp/www/b.html
