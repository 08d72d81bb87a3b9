"""Search: choosing what to test — pairs and priors, the event on selection runs, the declared
input domain, and DP-SGD's last-iterate canary.
"""
