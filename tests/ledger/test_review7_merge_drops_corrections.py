"""Review 7 (fixed): a cashier's takings counted each closed shift by its Z's own figures,
never the corrections later Zs carry, so a sale a Z named open that settled charged later
was in no cashier's takings: not in `qrpos report --merge` (the chain's roll-up), not in
the shift screen's and `qrpos shift x`'s "today by cashier", not in the metrics.

docs/shifts.md: "the Zs with their corrections are the books". Now a cashier's shift
counts its sales as their money stands now (`ledger.shifts.by_cashier`: the shift's live
figures; `qrpos report --json` gives each Z's `now`, which `report --merge` adds up, and
for a report made before `now`, the merge adds the corrections the day's later Zs carry).

All through the real `qrpos` commands against the sandbox over loopback HTTP: Bat's
sale's reply is lost and the history unreadable (`qrpos charge` exits 3, unresolved); Bat
closes his shift (Z 1 names the sale open); the service answers again and `qrpos outbox
resolve` proves the sale charged by its key's replay; Bat's next shift's Z 2 corrects Z 1
(+AMOUNT to sales); Bat's third shift's X, and the till's `report --json` into `report
--merge`, count the sale in his takings.
"""

from __future__ import annotations

import json
from pathlib import Path

from headless import fed, qrpos
from qrpos.simulator import Sandbox

AMOUNT = 4500
WARM = 100
PIN = "135792468013"


def test_the_merged_cashier_takings_count_a_sale_corrected_on_a_later_z(
    cli_env: dict[str, str], sandbox: Sandbox, tmp_path: Path
) -> None:
    env = cli_env
    assert fed(env, f"{PIN}\n", "cashier", "add", "Bat", "--pin-stdin").returncode == 0
    assert fed(env, f"{PIN}\n", "shift", "open", "Bat", "--pin-stdin").returncode == 0
    warm = sandbox.create_wallet(10_000)
    assert qrpos(env, "charge", "--amount", str(WARM), "--token", warm.qr_token).returncode == 0
    wallet = sandbox.create_wallet(10_000)
    sandbox.arm_fault("error_after_commit", count=1000, operation="charge")
    sandbox.arm_fault("error_before_commit", count=1000, operation="list")
    sale = qrpos(
        env, "charge", "--amount", str(AMOUNT), "--token", wallet.qr_token, "--deadline", "2"
    )
    assert sale.returncode == 3, sale.stdout + sale.stderr
    z1 = fed(env, f"{PIN}\n", "shift", "close", "--pin-stdin", "--json")
    assert z1.returncode == 0, z1.stdout + z1.stderr
    first = json.loads(z1.stdout)
    assert (first["sales_mnt"], len(first["unsettled"])) == (WARM, 1), first

    sandbox.clear_faults()
    resolved = qrpos(env, "outbox", "resolve", "--deadline", "20")
    assert resolved.returncode == 0, resolved.stdout + resolved.stderr
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 10_000 - AMOUNT
    assert fed(env, f"{PIN}\n", "shift", "open", "Bat", "--pin-stdin").returncode == 0
    z2 = fed(env, f"{PIN}\n", "shift", "close", "--pin-stdin", "--json")
    assert z2.returncode == 0, z2.stdout + z2.stderr
    second = json.loads(z2.stdout)
    assert [(c["was"], c["now"], c["sales_mnt"]) for c in second["corrections"]] == [
        ("unknown", "charged", AMOUNT)
    ], second

    # the till's own view of the day by cashier (the shift screen's and the metrics'
    # `by_cashier`) counts it too
    assert fed(env, f"{PIN}\n", "shift", "open", "Bat", "--pin-stdin").returncode == 0
    x = qrpos(env, "shift", "x", "--json")
    assert x.returncode == 0, x.stdout + x.stderr
    assert json.loads(x.stdout)["today_by_cashier"]["Bat"]["sales_mnt"] == WARM + AMOUNT

    day = qrpos(env, "report", "--json")
    assert day.returncode == 0, day.stdout + day.stderr
    till = tmp_path / "till1.json"
    till.write_text(day.stdout)
    assert json.loads(day.stdout)["charges"]["grossMNT"] == WARM + AMOUNT
    merged = qrpos(env, "report", "--merge", str(till), "--json")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    total = json.loads(merged.stdout)
    bat = total["cashiers"]["Bat"]
    assert bat["sales_mnt"] == total["charges"]["grossMNT"] == WARM + AMOUNT, total
    assert (bat["sales"], bat["shifts"]) == (2, 3), bat

    # a till's report made before reports carried each Z's figures `now`: the roll-up
    # adds the corrections the day's later Zs carry for the Z's sales
    older = json.loads(day.stdout)
    for shift in older["shifts"]:
        shift.pop("now", None)
    till.write_text(json.dumps(older))
    merged = qrpos(env, "report", "--merge", str(till), "--json")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    bat = json.loads(merged.stdout)["cashiers"]["Bat"]
    assert (bat["sales"], bat["sales_mnt"]) == (2, WARM + AMOUNT), bat
