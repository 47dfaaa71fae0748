"""``ember.hub`` against ``torch.hub``: the cache directories, weights by URL (``file://``, cached, hash-checked,
atomic), legacy zipped checkpoints, repositories with a ``hubconf.py`` (local, and a GitHub one already in the cache),
and urllib's error without a network."""
import os
import urllib.error
import zipfile

import numpy as np
import pytest

import ember
from ember import hub

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


@pytest.fixture(autouse=True)
def _clean_hub_dir(monkeypatch):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setattr(torch.hub, "_hub_dir", None)
    for var in ("TORCH_HOME", "XDG_CACHE_HOME", "TORCH_HUB", "TORCH_MODEL_ZOO"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize("env", [{}, {"XDG_CACHE_HOME": "/tmp/xdg"}, {"TORCH_HOME": "~/th"},
                                 {"TORCH_HOME": "/a/b", "XDG_CACHE_HOME": "/c"}])
def test_directories_follow_the_environment_as_in_pytorch(env, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert hub._get_torch_home() == torch.hub._get_torch_home()
    assert hub.get_dir() == torch.hub.get_dir()
    hub.set_dir("~/elsewhere")
    torch.hub.set_dir("~/elsewhere")
    assert hub.get_dir() == torch.hub.get_dir() == os.path.expanduser("~/elsewhere")


def _checkpoint(tmp_path, name):
    state = {"w": ember.arange(6.0).reshape(2, 3), "b": ember.tensor([1.5, -2.0])}
    path = tmp_path / name
    ember.save(state, str(path))
    return path


def test_weights_by_url_are_downloaded_once_and_read_from_the_cache(tmp_path):
    src = _checkpoint(tmp_path, "tiny.pth")
    url = src.as_uri()
    cache = tmp_path / "cache"
    got = hub.load_state_dict_from_url(url, model_dir=str(cache), progress=False)
    assert got["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert sorted(os.listdir(cache)) == ["tiny.pth"]            # no partial file left behind
    os.remove(src)                                              # a cached file is read without fetching
    again = hub.load_state_dict_from_url(url, model_dir=str(cache), weights_only=True, map_location="cpu")
    assert again["b"].tolist() == [1.5, -2.0]
    ref = torch.hub.load_state_dict_from_url(url, model_dir=str(cache))   # PyTorch reads ember's cache
    np.testing.assert_array_equal(ref["w"].numpy(), got["w"].numpy())
    renamed = hub.load_state_dict_from_url(_checkpoint(tmp_path, "x.pth").as_uri(), model_dir=str(cache),
                                           file_name="renamed.pth", progress=False)
    assert "renamed.pth" in os.listdir(cache) and renamed["w"].shape == (2, 3)


def test_the_default_cache_is_the_hub_dirs_checkpoints_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    hub.load_state_dict_from_url(_checkpoint(tmp_path, "m.pth").as_uri(), progress=False)
    assert os.listdir(tmp_path / "home" / "hub" / "checkpoints") == ["m.pth"]


def test_check_hash_compares_the_file_names_prefix_with_the_sha256(tmp_path):
    import hashlib
    src = _checkpoint(tmp_path, "tmp.pth")
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    good = tmp_path / f"net-{digest[:8]}.pth"
    os.rename(src, good)
    cache = tmp_path / "cache"
    assert hub.load_state_dict_from_url(good.as_uri(), model_dir=str(cache), check_hash=True, progress=False)
    bad = tmp_path / "net-deadbeef.pth"
    os.rename(good, bad)
    msg = f'invalid hash value (expected "deadbeef", got "{digest}")'
    with pytest.raises(RuntimeError) as ref:
        torch.hub.load_state_dict_from_url(bad.as_uri(), model_dir=str(tmp_path / "t"), check_hash=True,
                                           progress=False)
    with pytest.raises(RuntimeError) as got:
        hub.load_state_dict_from_url(bad.as_uri(), model_dir=str(cache), check_hash=True, progress=False)
    assert str(got.value) == str(ref.value) == msg
    assert "net-deadbeef.pth" not in os.listdir(cache) and not [f for f in os.listdir(cache) if "partial" in f]


def test_download_url_to_file_writes_atomically_with_a_progress_bar(tmp_path, capsys):
    src = tmp_path / "blob.bin"
    src.write_bytes(os.urandom(300_000))
    dst = tmp_path / "out" / "blob.bin"
    dst.parent.mkdir()
    hub.download_url_to_file(src.as_uri(), str(dst), progress=True)
    assert dst.read_bytes() == src.read_bytes() and os.listdir(dst.parent) == ["blob.bin"]
    assert "293k" in capsys.readouterr().err.replace("K", "k")     # tqdm's bar on stderr (bytes in KiB)
    with pytest.raises(urllib.error.URLError):
        hub.download_url_to_file((tmp_path / "missing.bin").as_uri(), str(tmp_path / "out" / "m.bin"),
                                 progress=False)
    assert os.listdir(dst.parent) == ["blob.bin"]


def test_without_a_network_the_error_is_urllibs_as_in_pytorch(tmp_path):
    url = "http://127.0.0.1:9/weights.pth"           # nothing listens on the discard port
    errors = []
    for h in (torch.hub, hub):
        with pytest.raises(urllib.error.URLError) as e:
            h.load_state_dict_from_url(url, model_dir=str(tmp_path / h.__name__), progress=False)
        errors.append(type(e.value))
        assert os.listdir(tmp_path / h.__name__) == []
    assert errors[0] is errors[1]


def test_legacy_zipped_checkpoints_are_extracted_and_loaded(tmp_path):
    src = _checkpoint(tmp_path, "old.pth")
    archive = tmp_path / "old.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(src, "old.pth")
    cache = tmp_path / "cache"
    with pytest.warns(FutureWarning, match="Falling back to the old format < 1.6"):
        got = hub.load_state_dict_from_url(archive.as_uri(), model_dir=str(cache), progress=False)
    assert got["w"].shape == (2, 3) and sorted(os.listdir(cache)) == ["old.pth", "old.zip"]


def test_zip_entries_cannot_escape_the_target_folder(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("../outside.txt", "x")
    for h in (torch.hub, hub):
        with zipfile.ZipFile(archive) as z, pytest.raises(ValueError,
                                                           match="Archive entry contains directory traversal"):
            h._safe_extract_zip(z, str(tmp_path / "dest"))
    assert not (tmp_path / "outside.txt").exists()


HUBCONF = '''
dependencies = ["numpy"]


def tiny(width=3):
    """A tiny linear model."""
    import numpy
    return {"weight": numpy.ones((width, 2))}


def _private():
    return None
'''


def test_load_from_a_local_hubconf(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(HUBCONF)
    got = hub.load(str(repo), "tiny", source="local", width=4)
    ref = torch.hub.load(str(repo), "tiny", source="local", width=4)
    assert got["weight"].shape == ref["weight"].shape == (4, 2)
    (repo / "hubconf.py").write_text(HUBCONF.replace('["numpy"]', '["numpy", "no_such_package_here"]'))
    for h in (torch.hub, hub):
        with pytest.raises(RuntimeError, match="Missing dependencies: no_such_package_here"):
            h.load(str(repo), "tiny", source="local")
    for h in (torch.hub, hub):
        with pytest.raises(ValueError, match='Unknown source: "gitlab". Allowed values: "github" | "local".'):
            h.load(str(repo), "tiny", source="gitlab")


def test_list_help_and_load_a_cached_github_repository_offline(tmp_path):
    for h in (torch.hub, hub):
        h.set_dir(str(tmp_path / "hub"))
        repo = tmp_path / "hub" / "someone_models_main"
        repo.mkdir(parents=True, exist_ok=True)
        (repo / "hubconf.py").write_text(HUBCONF)
        assert h.list("someone/models:main", trust_repo=True, skip_validation=True, verbose=False) == ["tiny"]
        assert h.help("someone/models:main", "tiny", trust_repo=True, skip_validation=True) == \
            "A tiny linear model."
        with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
            h.load("someone/models:main", "nope", trust_repo=True, skip_validation=True, verbose=False)
    assert (tmp_path / "hub" / "trusted_list").read_text() == ""   # a repository already fetched counts as trusted


def test_model_zoo_is_the_hub_loader():
    from ember.utils import model_zoo
    assert model_zoo.load_url is hub.load_state_dict_from_url
