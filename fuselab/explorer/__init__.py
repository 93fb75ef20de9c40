"""The explorer: everything a notebook shows of a Session.

One module per job: `graph` (Graphviz drawing of a plan, ids that map clicks back),
`code` (highlighted CUDA, NVRTC compile info), `numbers` (cost and timing tables),
`charts` (matplotlib), `export` (the plan as a standalone CuPy file), `static` (plain
HTML/SVG/PNG outputs), `widget` (the interactive explorer) with its browser side in
`frontend`. The views only read the session and ask it to re-plan; none computes
anything of its own. Heavy libraries (graphviz, matplotlib, ipywidgets, anywidget,
pygments) load inside functions.
"""
