"""nox -s verify -- --plugin examples/numpy_wkv7_plugin.py --variant 'wkv7.example.*'

The example now ships inside the package (wkvbench/examples/numpy_wkv7.py; `wkvbench example wkv7`
prints it); this path keeps working for the commands that name it."""
from wkvbench.examples import source

exec(compile(source("wkv7"), "wkvbench/examples/numpy_wkv7.py", "exec"))  # registers wkv7.example.numpy
