"""The tutorials as a student opens them: as Jupyter notebooks, and with the report, the guides and
the core's API as one website.

    notebooks.py  ``python -m numpy_mamba notebooks``: the percent-format tutorials and hand-outs as
                  .ipynb (jupytext), executed in a Jupyter kernel (nbclient) on request
    build.py      ``python -m numpy_mamba site``: the website, built by Sphinx with myst-nb from the
                  clone's sources, the tutorials executed
    project.py    its Sphinx project: settings, navigation, the API page, the hooks that let the pages
                  build as they are written
    check.py      ``site --check``: every page opened in headless Chromium (console, images, links, math)
    tutorial.py   what every tutorial uses: ``check`` (a measured number beside the expected one) and
                  ``show_figure`` (a window, or a PNG saved and named where none can open)

The two commands run from a clone (the tutorials and the report are not part of the installed package)
and need an extra: ``notebooks``, or ``docs`` for the site.
"""
