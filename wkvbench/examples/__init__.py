"""Plug-in examples shipped with the package: complete, runnable ``--plugin`` files.

``wkvbench example gdn > mygdn.py`` (or ``python -m wkvbench.examples gdn``) writes one into the
current directory, to edit into your own kernel; ``wkvbench example`` lists them. Each file's first
line is the command that runs it. They are read as text, never imported here (importing one
registers its variant).
"""

from __future__ import annotations

import sys
from importlib import resources

# name -> (file in this package, what it shows)
EXAMPLES: dict[str, tuple[str, str]] = {
    "wkv7": ("numpy_wkv7.py", "RWKV-7 in NumPy, fp32: the smallest complete plug-in"),
    "gdn": ("numpy_gdn.py", "Gated DeltaNet in NumPy, fp32/fp16 (bf16 with ml-dtypes): rounding to the case "
                            "dtype, y returned in it, the state in fp32"),
}


def source(name: str) -> str:
    """The text of example ``name`` (a key of ``EXAMPLES``)."""
    if name not in EXAMPLES:
        raise KeyError(f"no example {name!r}; examples: {', '.join(EXAMPLES)}")
    return resources.files(__package__).joinpath(EXAMPLES[name][0]).read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Print example ``argv[0]``'s source, or list the examples; 2 for an unknown name."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        width = max(map(len, EXAMPLES))
        for name, (_, what) in EXAMPLES.items():
            print(f"{name:<{width}}  {what}")
        print("wkvbench example NAME > myplugin.py   writes one to edit; its first line runs it")
        return 0
    try:
        sys.stdout.write(source(args[0]))
    except KeyError as exc:
        print(f"wkvbench example: {exc.args[0]}", file=sys.stderr)
        return 2
    return 0
