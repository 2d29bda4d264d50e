"""systemd sd_notify: READY=1, WATCHDOG=1 and STATUS= without a libsystemd dependency."""
