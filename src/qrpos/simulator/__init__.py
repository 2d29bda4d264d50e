"""A faithful sandbox of the Terminal Charge Service (an ASGI app), with fault injection."""
