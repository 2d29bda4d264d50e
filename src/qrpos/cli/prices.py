"""`qrpos prices`: the owner's quick prices, charged on the kiosk by one key (F3..F11).

    qrpos prices                      list them
    qrpos prices set 1 4500 "Set A"   slot 1 (key F3) charges 4 500 ₮
    qrpos prices clear 1              empty slot 1

A running kiosk reads them when its next amount screen comes up. Exit codes: 0 done,
1 local error (the file cannot be read or written), 64 usage.
"""

from __future__ import annotations

import argparse
from typing import Any

from qrpos.cli import usage
from qrpos.cli.common import EXIT_OK, SETUP_ERRORS, config_from_args, fail
from qrpos.present.i18n import t


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "prices",
        help=t("help.prices.summary"),
        description=t("help.prices.about"),
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    put = actions.add_parser("set", help=t("help.prices.set.summary"))
    put.add_argument("slot", type=usage.bounded_int(1, 9), help=t("help.prices.set.slot"))
    put.add_argument("amount", type=usage.amount_mnt, help=t("help.prices.set.amount"))
    put.add_argument(
        "label", nargs="?", default="", type=usage.text, help=t("help.prices.set.label")
    )
    clear = actions.add_parser("clear", help=t("help.prices.clear.summary"))
    clear.add_argument("slot", type=usage.bounded_int(1, 9), help=t("help.prices.clear.slot"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from qrpos.present.format import TUGRIK, group_thousands
    from qrpos.quick_prices import QuickPriceError, clear_price, key_of, load_prices, set_price

    try:
        state_dir = config_from_args(args).state_dir
        if args.action == "set":
            price = set_price(state_dir, args.slot, args.amount, args.label)
            amount = f"{group_thousands(price.amount)} {TUGRIK}"
            print(f"{t('prices.saved', fkey=price.key, amount=amount)} {price.label}".rstrip())
            return EXIT_OK
        if args.action == "clear":
            held = clear_price(state_dir, args.slot)
            word = "prices.cleared" if held else "cli.prices.was_empty"
            print(t(word, fkey=key_of(args.slot)))
            return EXIT_OK
        prices = load_prices(state_dir)
    except (QuickPriceError, OSError, *SETUP_ERRORS) as exc:
        return fail(exc)
    if not prices:
        print(t("cli.prices.none"))
    for price in sorted(prices.values(), key=lambda p: p.slot):
        amount = f"{group_thousands(price.amount):>9} {TUGRIK}"
        print(f"{price.key:>4}  {amount}  {price.label}".rstrip())
    return EXIT_OK
