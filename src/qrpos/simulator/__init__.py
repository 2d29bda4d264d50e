"""A faithful sandbox of the Terminal Charge Service (an ASGI app), with fault injection.

sandbox = Sandbox(SimulatorOptions(vat_issue_delay_s=2))
creds = sandbox.create_terminal("m1")
wallet = sandbox.create_wallet(50_000)
with serve_in_thread(create_app(sandbox)) as base_url:
    ...
"""

from qrpos.simulator.app import create_app
from qrpos.simulator.faults import FAULT_KINDS
from qrpos.simulator.http import ConnectionDropped
from qrpos.simulator.model import SimTransaction, TerminalCredentials, WalletInfo
from qrpos.simulator.options import SimulatorOptions
from qrpos.simulator.sandbox import Sandbox, SandboxError, UnknownRecord
from qrpos.simulator.server import serve_in_thread

__all__ = [
    "FAULT_KINDS",
    "ConnectionDropped",
    "Sandbox",
    "SandboxError",
    "SimTransaction",
    "SimulatorOptions",
    "TerminalCredentials",
    "UnknownRecord",
    "WalletInfo",
    "create_app",
    "serve_in_thread",
]
