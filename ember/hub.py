"""``ember.hub`` (``torch/hub.py``): pretrained weights by URL and models from repositories with a ``hubconf.py``.

Where things live: the hub directory is ``get_dir()`` -- ``set_dir(d)`` if called, else ``$TORCH_HOME/hub``, where
``TORCH_HOME`` defaults to ``$XDG_CACHE_HOME/torch`` and ``XDG_CACHE_HOME`` to ``~/.cache``. Weights fetched by
``load_state_dict_from_url`` are cached in ``<hub dir>/checkpoints/<file name>``; a cached file is read without
touching the network. Repositories fetched from GitHub are unpacked into ``<hub dir>/<owner>_<name>_<ref>``.

Downloads are atomic: the bytes go to ``<dst>.<uuid>.partial`` and the file is renamed into place only once it is
complete (and its SHA-256 matches the hash prefix, when one is checked), so a broken download never leaves a
truncated checkpoint behind. Without a network the error is urllib's (``URLError``), as in PyTorch.
"""
from __future__ import annotations

import builtins
import contextlib
import errno
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zipfile
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

try:
    from tqdm import tqdm
except ImportError:
    class tqdm:  # type: ignore[no-redef]
        """A byte counter written to stderr, for when the tqdm package is absent."""

        def __init__(self, total: int | None = None, disable: bool = False, unit: str | None = None, *args: Any,
                     **kwargs: Any) -> None:
            self.total, self.disable, self.unit, self.n = total, disable, unit, 0

        def update(self, n: int) -> None:
            if self.disable:
                return
            self.n += n
            if self.total is None:
                sys.stderr.write(f"\r{self.n:.1f} bytes")
            else:
                sys.stderr.write(f"\r{100 * self.n / float(self.total):.1f}%")
            sys.stderr.flush()

        def set_description(self, *args: Any, **kwargs: Any) -> None:
            pass

        def write(self, s: str) -> None:
            sys.stderr.write(f"{s}\n")

        def close(self) -> None:
            self.disable = True

        def __enter__(self) -> "tqdm":
            return self

        def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
            if self.disable:
                return
            sys.stderr.write("\n")


ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
# the file name of a published checkpoint carries the first hex digits of its SHA-256: resnet18-f37072fd.pth
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")

_hub_dir: str | None = None


# ----------------------------------------------------------------------------------------------- directories
def _get_torch_home() -> str:
    """``$TORCH_HOME``, else ``$XDG_CACHE_HOME/torch``, else ``~/.cache/torch`` (user-expanded)."""
    default = os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "torch")
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, default))


def get_dir() -> str:
    """The hub cache directory: ``set_dir``'s, else ``$TORCH_HOME/hub``."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Use ``d`` as the hub directory from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


# ----------------------------------------------------------------------------------------------- downloads
def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download ``url`` to the path ``dst``, atomically; with ``hash_prefix``, the file's SHA-256 must start with it
    (``RuntimeError: invalid hash value`` otherwise, and nothing is written). ``progress`` shows a bar on stderr."""
    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        tmp_dst = f"{dst}.{uuid.uuid4().hex}.partial"
        try:
            f = open(tmp_dst, "w+b")
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    try:
        with urlopen(Request(url, headers={"User-Agent": "torch.hub"})) as u:
            lengths = u.info().get_all("Content-Length")
            file_size = int(lengths[0]) if lengths else None
            sha256 = hashlib.sha256() if hash_prefix is not None else None
            with tqdm(total=file_size, disable=not progress, unit="B", unit_scale=True, unit_divisor=1024) as bar:
                while True:
                    chunk = u.read(READ_DATA_CHUNK)
                    if not chunk:
                        break
                    f.write(chunk)
                    if sha256 is not None:
                        sha256.update(chunk)
                    bar.update(len(chunk))
            f.close()
            if sha256 is not None:
                digest = sha256.hexdigest()
                if digest[:len(hash_prefix)] != hash_prefix:
                    raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(f.name, dst)
    finally:
        f.close()
        if os.path.exists(f.name):
            os.remove(f.name)


def _is_legacy_zip_format(filename: str) -> bool:
    """A zip holding one plain file: how checkpoints were published before the zip serialization format."""
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as zf:
            infolist = zf.infolist()
        return len(infolist) == 1 and not infolist[0].is_dir()
    return False


def _legacy_zip_load(filename: str, model_dir: str, map_location: Any, weights_only: bool) -> Any:
    warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in favor of default zipfile "
                  "format introduced in 1.6. Please redo torch.save() to save it in the new zipfile format.",
                  FutureWarning, stacklevel=3)
    from ember.serialization import load as ember_load
    with zipfile.ZipFile(filename) as f:
        members = f.infolist()
        if len(members) != 1:
            raise RuntimeError("Only one file(not dir) is allowed in the zipfile")
        _safe_extract_zip(f, model_dir)
        extracted_file = os.path.join(model_dir, members[0].filename)
    return ember_load(extracted_file, map_location=map_location, weights_only=weights_only)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """The object serialized at ``url`` (a state dict, usually), downloaded once into ``model_dir`` (default
    ``<hub dir>/checkpoints``) and read from there afterwards.

    Args:
        url: the address (``https://``, ``file://``, ...).
        model_dir: where the file is cached.
        map_location: as for ``ember.load``.
        progress: show a progress bar while downloading.
        check_hash: the file name's ``-<hex>.`` part must be a prefix of the downloaded file's SHA-256.
        file_name: the cached file's name (default: the URL's last path component).
        weights_only: load through the weights-only unpickler.
    """
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            hash_prefix = match.group(1) if match else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached_file):
        return _legacy_zip_load(cached_file, model_dir, map_location, weights_only)
    from ember.serialization import load as ember_load
    return ember_load(cached_file, map_location=map_location, weights_only=weights_only)


def _safe_extract_zip(zip_file: zipfile.ZipFile, extract_to: str) -> None:
    """Extract every member, refusing absolute paths and paths that climb out of ``extract_to`` (zip slip)."""
    root = Path(extract_to).resolve(strict=False)
    for member in zip_file.infolist():
        filename = os.path.normpath(member.filename)
        if filename.startswith(("/", "\\")) or (len(filename) >= 2 and filename[1] == ":" and filename[0].isalpha()):
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if ".." in re.split(r"[/\\]", filename):
            raise ValueError(f"Archive entry contains directory traversal: {member.filename}")
        if not (root / filename).resolve(strict=False).is_relative_to(root):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        zip_file.extract(member, root)


# ----------------------------------------------------------------------------------------------- repositories
@contextlib.contextmanager
def _add_to_sys_path(path: str) -> Any:
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_module(name: str, path: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AssertionError(f"failed to load spec from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _remove_if_exists(path: str) -> None:
    if os.path.exists(path):
        if os.path.isfile(path):
            os.remove(path)
        else:
            shutil.rmtree(path)


def _parse_repo_info(github: str) -> tuple[str, str, str]:
    """``owner/name[:ref]``; without a ref, ``main`` when the repository has that branch, else ``master``."""
    repo_info, _, ref = github.partition(":")
    repo_owner, repo_name = repo_info.split("/")
    if ref:
        return repo_owner, repo_name, ref
    try:
        with urlopen(f"https://github.com/{repo_owner}/{repo_name}/tree/main/"):
            return repo_owner, repo_name, "main"
    except HTTPError as e:
        if e.code == 404:
            return repo_owner, repo_name, "master"
        raise
    except URLError as e:
        for possible_ref in ("main", "master"):       # offline: a cached copy still serves
            if os.path.exists(f"{get_dir()}/{repo_owner}_{repo_name}_{possible_ref}"):
                return repo_owner, repo_name, possible_ref
        raise RuntimeError("It looks like there is no internet connection and the repo could not be found in the "
                           f"cache ({get_dir()})") from e


def _validate_not_a_forked_repo(repo_owner: str, repo_name: str, ref: str) -> None:
    headers = {"Accept": "application/vnd.github.v3+json"}
    token = os.environ.get(ENV_GITHUB_TOKEN)
    if token is not None:
        headers["Authorization"] = f"token {token}"
    for url_prefix in (f"https://api.github.com/repos/{repo_owner}/{repo_name}/branches",
                       f"https://api.github.com/repos/{repo_owner}/{repo_name}/tags"):
        page = 0
        while True:
            page += 1
            url = f"{url_prefix}?per_page=100&page={page}"
            try:
                response = json.loads(_read_url(Request(url, headers=headers)))
            except HTTPError:
                headers.pop("Authorization", None)      # retry without a token that lacks the permission
                response = json.loads(_read_url(Request(url, headers=headers)))
            if not response:
                break
            if any(br["name"] == ref or br["commit"]["sha"].startswith(ref) for br in response):
                return
    raise ValueError(f"Cannot find {ref} in https://github.com/{repo_owner}/{repo_name}. If it's a commit from a "
                     "forked repo, please call hub.load() with forked repo directly.")


def _read_url(url: Any) -> str:
    with urlopen(url) as r:
        return r.read().decode(r.headers.get_content_charset("utf-8"))


def _check_repo_is_trusted(repo_owner: str, repo_name: str, owner_name_branch: str, trust_repo: Any) -> None:
    """Ask before running code from a repository that is not on ``<hub dir>/trusted_list``."""
    hub_dir = get_dir()
    filepath = os.path.join(hub_dir, "trusted_list")
    if not os.path.exists(filepath):
        Path(filepath).touch()
    with open(filepath) as file:
        trusted_repos = tuple(line.strip() for line in file)
    downloaded_before = next(os.walk(hub_dir))[1]   # a repository fetched before the list existed counts as trusted
    owner_name = f"{repo_owner}_{repo_name}"
    is_trusted = (owner_name in trusted_repos or owner_name_branch in downloaded_before
                  or repo_owner in _TRUSTED_REPO_OWNERS)
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        response = input(f"The repository {owner_name} does not belong to the list of trusted repositories and as "
                         "such cannot be downloaded. Do you trust this repository and wish to add it to the trusted "
                         "list of repositories (y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        with open(filepath, "a") as file:
            file.write(owner_name + "\n")


def _get_cache_or_reload(github: str, force_reload: bool, trust_repo: Any, verbose: bool = True,
                         skip_validation: bool = False) -> str:
    """The local folder of GitHub repository ``github``: the cached copy, or a fresh download of its zip archive."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    repo_owner, repo_name, ref = _parse_repo_info(github)
    normalized_br = ref.replace("/", "_")
    owner_name_branch = "_".join([repo_owner, repo_name, normalized_br])
    repo_dir = os.path.join(hub_dir, owner_name_branch)
    _check_repo_is_trusted(repo_owner, repo_name, owner_name_branch, trust_repo=trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    if not skip_validation:
        _validate_not_a_forked_repo(repo_owner, repo_name, ref)
    cached_file = os.path.join(hub_dir, normalized_br + ".zip")
    _remove_if_exists(cached_file)
    url = f"https://github.com/{repo_owner}/{repo_name}/zipball/{ref}"
    try:
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        download_url_to_file(url, cached_file, progress=False)
    except HTTPError as err:
        if err.code != 300:
            raise
        # 300 Multiple Choices: the ref is both a tag and a branch; take the branch, as git does
        warnings.warn(f"The ref {ref} is ambiguous. Perhaps it is both a tag and a branch in the repo? Torchhub will "
                      "now assume that it's a branch. You can disambiguate tags and branches by explicitly passing "
                      "refs/heads/branch_name or refs/tags/tag_name as the ref. That might require using "
                      "skip_validation=True.", stacklevel=2)
        url = f"https://github.com/{repo_owner}/{repo_name}/zipball/refs/heads/{ref}"
        download_url_to_file(url, cached_file, progress=False)
    with zipfile.ZipFile(cached_file) as cached_zipfile:
        extracted_repo = os.path.join(hub_dir, cached_zipfile.infolist()[0].filename)
        _remove_if_exists(extracted_repo)
        _safe_extract_zip(cached_zipfile, hub_dir)
    _remove_if_exists(cached_file)
    _remove_if_exists(repo_dir)
    shutil.move(extracted_repo, repo_dir)
    return repo_dir


def _load_attr_from_module(module: Any, func_name: str) -> Any:
    return getattr(module, func_name, None)


def _check_dependencies(m: Any) -> None:
    dependencies = _load_attr_from_module(m, VAR_DEPENDENCY)
    if dependencies is not None:
        missing = [pkg for pkg in dependencies if importlib.util.find_spec(pkg) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")


def _load_entry_from_hubconf(m: Any, model: Any) -> Any:
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    _check_dependencies(m)
    func = _load_attr_from_module(m, model)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _hubconf(repo_dir: str) -> Any:
    with _add_to_sys_path(repo_dir):
        return _import_module(MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))


def list(github: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = "check", verbose: bool = True) -> builtins.list[str]:
    """The entry points (public callables of ``hubconf.py``) of GitHub repository ``owner/name[:ref]``."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=verbose, skip_validation=skip_validation)
    hub_module = _hubconf(repo_dir)
    return [f for f in dir(hub_module) if callable(getattr(hub_module, f)) and not f.startswith("_")]


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = "check") -> str | None:
    """The docstring of entry point ``model`` of GitHub repository ``owner/name[:ref]``."""
    repo_dir = _get_cache_or_reload(github, force_reload, trust_repo, verbose=True, skip_validation=skip_validation)
    return _load_entry_from_hubconf(_hubconf(repo_dir), model).__doc__


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github", trust_repo: Any = "check",
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False, **kwargs: Any) -> Any:
    """Call entry point ``model`` of a repository's ``hubconf.py`` with ``*args, **kwargs``.

    ``source="github"``: ``repo_or_dir`` is ``owner/name[:ref]``, downloaded once into the hub directory.
    ``source="local"``: ``repo_or_dir`` is a folder holding ``hubconf.py``. The ``hubconf``'s ``dependencies``
    list must name importable packages."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, verbose=verbose,
                                           skip_validation=skip_validation)
    return _load_local(repo_or_dir, model, *args, **kwargs)


def _load_local(hubconf_dir: str, model: str, *args: Any, **kwargs: Any) -> Any:
    with _add_to_sys_path(hubconf_dir):
        hub_module = _import_module(MODULE_HUBCONF, os.path.join(hubconf_dir, MODULE_HUBCONF))
        entry = _load_entry_from_hubconf(hub_module, model)
        return entry(*args, **kwargs)
