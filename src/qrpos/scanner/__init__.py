"""Frame sources, byte-exact QR decoders, token rules and the scan loop."""
