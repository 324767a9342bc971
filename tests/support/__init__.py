"""What the tests share: fake brokers and peers, proxies, the real servers and broker of the
session, the Java peers (java/: Maven projects), and the helpers of each protocol family."""
