"""frontend.py finds the built lab extension where JupyterLab looks for it, and only there."""

from __future__ import annotations

import json

from unified_exec_kernel import frontend


def test_a_built_extension_on_the_data_path_is_found(tmp_path, monkeypatch):
    folder = tmp_path / "labextensions" / frontend.LABEXTENSION
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps({"name": frontend.LABEXTENSION}))
    monkeypatch.setattr(frontend, "jupyter_path", lambda sub: [str(tmp_path / "elsewhere" / sub), str(tmp_path / sub)])
    assert frontend.labextension_path() == folder
    assert frontend.frontend_installed()


def test_install_json_alone_is_not_a_built_extension(tmp_path, monkeypatch):
    # what a Node-less install leaves: the wheel's shared-data maps install.json even when nothing was built
    folder = tmp_path / "labextensions" / frontend.LABEXTENSION
    folder.mkdir(parents=True)
    (folder / "install.json").write_text("{}")
    monkeypatch.setattr(frontend, "jupyter_path", lambda sub: [str(tmp_path / sub)])
    assert frontend.labextension_path() is None
    assert not frontend.frontend_installed()


def test_this_environment_has_the_built_extension():
    # the test environment is installed with Node (README's test command): its extension must be found
    found = frontend.labextension_path()
    assert found is not None and json.loads((found / "package.json").read_text())["name"] == frontend.LABEXTENSION


def test_the_line_says_what_to_install():
    assert "Node >= 18" in frontend.NOT_BUILT and "reinstall" in frontend.NOT_BUILT and "\n" not in frontend.NOT_BUILT
