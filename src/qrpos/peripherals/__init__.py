"""The till's optional peripherals: sounds (and, as they land, a receipt printer and a
handheld scanner). Each may be missing or vanish at any moment; the sale goes on without
it and the screen says what needs attention. Imports no Textual."""
