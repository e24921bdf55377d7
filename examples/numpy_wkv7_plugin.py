"""nox -s verify -- --plugin examples/numpy_wkv7_plugin.py --variant 'wkv7.example.*'

The example now ships inside the package (wkvbench/examples/numpy_wkv7.py; `wkvbench example wkv7`
prints it); this path keeps working for the commands that name it."""
import wkvbench.examples.numpy_wkv7  # noqa: F401  (registers wkv7.example.numpy)
