echo c > /tmp/www/c.html
