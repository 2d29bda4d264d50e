"""The Textual kiosk app: the only package that imports Textual.

`sale.py` owns the sale (its states and moves), `app.py` and `screen_keeper.py` run it
on screen, `screens/` and `widgets/` render and post messages. The words come from
`qrpos.present`; the wiring that builds and starts the app is `qrpos.kiosk`.
"""
