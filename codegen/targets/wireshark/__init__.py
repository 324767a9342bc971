"""The Wireshark target: one Lua dissector per protocol version (``dissector``)."""
