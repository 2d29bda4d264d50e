"""The cashier hears the outcome: the real app plays the approved and declined tones
through the till's sound outputs, and the bell only where there is no speaker."""

from __future__ import annotations

from kiosk_harness import Kiosk

from qrpos.peripherals.sound import Sounds
from qrpos.present.outcome import ToneName
from qrpos.simulator import WalletInfo
from qrpos.tui.messages import TokenScanned


class Recorder:
    """A sound output of ours that keeps what it was asked to play."""

    name = "recorder"

    def __init__(self, works: bool = True) -> None:
        self.played: list[ToneName] = []
        self.works = works

    def play(self, tone: ToneName) -> bool:
        self.played.append(tone)
        return self.works


async def _sale(kiosk: Kiosk, amount: str, token: str) -> None:
    await kiosk.key_amount(amount)
    await kiosk.on_screen("PresentCardScreen")
    kiosk.app.post_message(TokenScanned(token))
    await kiosk.on_screen("ResultScreen")
    await kiosk.pilot.pause()


async def test_approved_and_declined_sound_different(kiosk: Kiosk, wallet: WalletInfo) -> None:
    speaker = Recorder()
    kiosk.services.sounds = Sounds([speaker])
    await _sale(kiosk, "500", wallet.qr_token)
    await kiosk.pilot.press("x")
    poor = kiosk.sandbox.create_wallet(100)
    await _sale(kiosk, "500", poor.qr_token)
    assert speaker.played == ["approved", "declined"]


async def test_a_speaker_that_fails_leaves_the_bell(kiosk: Kiosk, wallet: WalletInfo) -> None:
    gone = Recorder(works=False)
    kiosk.services.sounds = Sounds([gone])
    rung: list[int] = []
    kiosk.app.bell = lambda: rung.append(1)  # type: ignore[method-assign]
    await _sale(kiosk, "500", wallet.qr_token)
    assert gone.played == ["approved"] and rung == [1]


async def test_sound_off_is_silent(kiosk: Kiosk, wallet: WalletInfo) -> None:
    kiosk.services.sounds = Sounds(enabled=False)
    rung: list[int] = []
    kiosk.app.bell = lambda: rung.append(1)  # type: ignore[method-assign]
    await _sale(kiosk, "500", wallet.qr_token)
    assert rung == []
