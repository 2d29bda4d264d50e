"""The kiosk's wiring: what `qrpos run` and `qrpos demo` build and hand to the Textual app.

- `production`: the outbox, the configured camera and the client from the stored password;
- `demo`: the same over an embedded sandbox and a virtual phone;
- `starter`: builds either after the first screen is drawn, in the app's thread worker;
- `launch`: runs the app (the only module here that loads `qrpos.tui.app`, and so Textual).

This is the composition root: it may import every layer; nothing imports it but
`qrpos.cli.kiosk`. The app's side of the wiring (`KioskServices`, `ServicesStarter`) is in
`qrpos.tui.services` and `qrpos.tui.startup`.
"""
