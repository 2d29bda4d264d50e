"""The kiosk's screens, one per step of the sale and per exceptional state."""
