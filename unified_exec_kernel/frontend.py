"""Is the built front end installed here, and the one line that says how to get it when it is not.

A clone installed without Node gets the Python package but no lab extension
(build_frontend.py skips the npm build; pip shows that build's line only
with `-v`). JupyterLab then cannot draw the live view's widget and would show
"Failed to load model class" where the view should be; the widget shows its
text snapshot and this line instead. The check is what JupyterLab itself
reads: an extension folder with a package.json on the Jupyter data path.
"""

from __future__ import annotations

from pathlib import Path

from jupyter_core.paths import jupyter_path

LABEXTENSION = "unified-exec-kernel"

NOT_BUILT = (
    "[no live view: this package's front end was not built when it was installed (no Node >= 18 then); "
    "install Node >= 18 and reinstall the package to get it]"
)


def labextension_path() -> Path | None:
    """The installed, built lab extension of this package, or None."""
    for base in jupyter_path("labextensions"):
        folder = Path(base) / LABEXTENSION
        if (folder / "package.json").is_file():
            return folder
    return None


def frontend_installed() -> bool:
    return labextension_path() is not None
