"""Words and numbers for people, shared by `qrpos.cli` and `qrpos.tui`.

- `i18n`: the catalogues (`locales/<lang>/*.toml`, Mongolian and English) and `t()`;
- `format`: money, local times, untrusted text made inert, large digits;
- `outcome`: a finished sale in the cashier's words;
- `owner`: the owner's figures (history rows, end of day, refunds) as lines of text;
- `language`: the language chosen on the kiosk, remembered in the state dir.

Imports no Textual and nothing of `qrpos.tui` or `qrpos.cli` (an import-linter contract
in pyproject.toml holds this), so every command can speak without loading the UI.
"""
