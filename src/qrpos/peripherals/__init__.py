"""The till's optional peripherals: sounds, a receipt printer and a customer display (a
second screen through DRM/KMS, a 2x20 pole display through pyserial); the handheld scanner
lives with the camera in `qrpos.scanner`. Each may be missing or vanish at any moment; the
sale goes on without it and the screen says what needs attention. Imports no Textual."""
