"""The explorer: everything a notebook shows of a Session.

One module per view — `graph` (Graphviz drawing of a plan), `code` (highlighted CUDA,
compile info, export), `numbers` (cost and timing tables), `charts` (matplotlib),
`static` (plain HTML/SVG/PNG outputs) and `widget` (the interactive explorer). The views
only read the session and ask it to re-plan; none computes anything of its own.
Heavy libraries (graphviz, matplotlib, ipywidgets, anywidget) load inside functions.
"""
