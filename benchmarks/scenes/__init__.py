"""The scene generators the benchmarks and the scanner tests share (the hard set, the field
set): tools, not the product, so they live here and never ship in the wheel
(tests/installer/test_wheel_contents.py). Import them with `benchmarks/` on sys.path."""
