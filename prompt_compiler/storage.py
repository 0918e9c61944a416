"""Object storage (``s3://bucket/key``): the file system, a create-if-absent write, a local copy.

Everything goes through pyarrow's ``S3FileSystem`` (the ``parquet`` / ``ray`` extras install
pyarrow), configured from the standard AWS environment: ``AWS_ENDPOINT_URL`` (or
``AWS_ENDPOINT_URL_S3``) for an S3-compatible server, ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``);
credentials not in the environment are found as pyarrow's AWS SDK finds them.

:func:`create_if_absent` is the one write pyarrow cannot make: ``PUT`` with
``If-None-Match: *`` (the object is created only if no object has that key; S3, SeaweedFS
and MinIO honour it), signed here with AWS Signature Version 4 from the environment's keys.
It is how a run takes the lock of an output prefix (:mod:`prompt_compiler.emit.objstore`).

Rows named by an ``s3://`` path (``path:``, ``data_files:``, ``--data-dir``) are read from a
local copy (:func:`local_copy`), made once per object version in the user's cache folder
(``$XDG_CACHE_HOME/prompt-compiler/s3``) by each process that reads them.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import os
import tempfile
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ._version import install_hint
from .errors import ConfigError, OutputError

__all__ = ["SCHEME", "create_if_absent", "filesystem", "join", "local_copy", "object_digests",
           "object_sha256", "object_uri", "objects", "split"]

SCHEME = "s3://"


def object_uri(value: Any) -> str | None:
    """``value`` as an ``s3://bucket/key`` URI if it names one, else None.

    A ``Path`` made from such a string (``Path("s3://b/k")`` reads ``s3:/b/k``) is
    recognised too, so a URI survives a ``Path`` conversion on the way.
    """
    if value is None:
        return None
    text = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(text, str):
        return None
    if text.startswith(SCHEME):
        uri = text
    elif text.startswith("s3:/") and not text.startswith("s3://"):
        uri = SCHEME + text[len("s3:/"):]
    elif text == "s3:":  # ``Path("s3://")``
        uri = SCHEME
    else:
        return None
    bucket = uri[len(SCHEME):].split("/", 1)[0]
    if not bucket:
        raise ConfigError(f"{text}: an s3:// URI needs a bucket (s3://BUCKET/PREFIX)")
    return uri.rstrip("/")


def split(uri: str) -> tuple[str, str]:
    """``(bucket, key)`` of ``s3://bucket/key``."""
    bucket, _, key = uri[len(SCHEME):].partition("/")
    return bucket, key.strip("/")


def join(uri: str, *names: str) -> str:
    """``uri/name/...``."""
    return "/".join([uri.rstrip("/"), *[n.strip("/") for n in names if n]])


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def endpoint() -> str | None:
    """The S3 endpoint of the environment (None: AWS's own)."""
    return _env("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")


def filesystem() -> Any:
    """pyarrow's ``S3FileSystem`` for the environment (paths are ``bucket/key``).

    Raises:
        ConfigError: pyarrow is not installed.
    """
    try:
        from pyarrow import fs
    except ImportError:
        raise ConfigError("s3:// paths need the 'pyarrow' package",
                          hint=install_hint("parquet")) from None
    kwargs: dict[str, Any] = {}
    url = endpoint()
    if url:
        parsed = urllib.parse.urlsplit(url)
        kwargs["endpoint_override"] = parsed.netloc or url
        kwargs["scheme"] = parsed.scheme or "https"
    region = _env("AWS_REGION", "AWS_DEFAULT_REGION")
    if region:
        kwargs["region"] = region
    key, secret = _env("AWS_ACCESS_KEY_ID"), _env("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        kwargs.update(access_key=key, secret_key=secret,
                      session_token=_env("AWS_SESSION_TOKEN"))
    return fs.S3FileSystem(**kwargs)


def _path(uri: str) -> str:
    bucket, key = split(uri)
    return f"{bucket}/{key}" if key else bucket


# -- create if absent (the lock) ------------------------------------------------------------


def create_if_absent(uri: str, body: bytes) -> bool:
    """Create the object ``uri`` holding ``body`` only if no object has that key: True if
    created, False if one exists.

    Raises:
        OutputError: The store cannot make a conditional write, or the request failed.
    """
    import http.client

    key, secret = _env("AWS_ACCESS_KEY_ID"), _env("AWS_SECRET_ACCESS_KEY")
    if not (key and secret):
        raise OutputError(f"{uri}: the lock of an s3:// output is created with a signed "
                          "conditional write, which needs AWS_ACCESS_KEY_ID and "
                          "AWS_SECRET_ACCESS_KEY in the environment",
                          hint="set them (and AWS_ENDPOINT_URL for a server other than AWS)")
    bucket, name = split(uri)
    url = endpoint()
    region = _env("AWS_REGION", "AWS_DEFAULT_REGION") or "us-east-1"
    if url:
        parsed = urllib.parse.urlsplit(url)
        scheme, host, path = parsed.scheme or "https", parsed.netloc, f"/{bucket}/{name}"
    else:
        scheme, host, path = "https", f"{bucket}.s3.{region}.amazonaws.com", f"/{name}"
    path = urllib.parse.quote(path, safe="/-_.~")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    digest = hashlib.sha256(body).hexdigest()
    headers = {"host": host, "if-none-match": "*", "x-amz-content-sha256": digest,
               "x-amz-date": now}
    token = _env("AWS_SESSION_TOKEN")
    if token:
        headers["x-amz-security-token"] = token
    names = sorted(headers)
    canonical = "\n".join(["PUT", path, "", "".join(f"{n}:{headers[n]}\n" for n in names),
                           ";".join(names), digest])
    scope = f"{now[:8]}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", now, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    signing = ("AWS4" + secret).encode()
    for part in (now[:8], region, "s3", "aws4_request"):
        signing = hmac.new(signing, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(signing, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={key}/{scope}, "
                                f"SignedHeaders={';'.join(names)}, Signature={signature}")
    connect = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    try:
        conn = connect(host, timeout=60)
        conn.request("PUT", path, body=body, headers=headers)
        response = conn.getresponse()
        text = response.read(2048).decode("utf-8", "replace")
        conn.close()
    except OSError as exc:
        raise OutputError(f"cannot create the lock {uri}: {exc}") from None
    if response.status in (200, 201):
        return True
    if response.status in (409, 412):
        return False
    if response.status == 501 or "NotImplemented" in text:
        why = "the store does not support conditional writes (If-None-Match)"
    else:
        why = f"HTTP {response.status} {response.reason}"
    raise OutputError(f"cannot create the lock {uri}: {why}",
                      hint="write the output to a store with conditional writes (S3, MinIO, "
                           "SeaweedFS), or to a folder")


# -- a local copy of rows --------------------------------------------------------------------


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "prompt-compiler", "s3")


def _listing(store: Any, uri: str, keep: tuple[str, ...]) -> tuple[list[Any], str, bool]:
    """``(the objects, the key they are named under, whether uri is one object)``: the object
    ``uri``, or every object under ``uri/`` (with ``keep``, only those whose name under it is
    one of ``keep`` or lies in a folder of that name)."""
    from pyarrow import fs as pafs

    path = _path(uri)
    try:
        info = store.get_file_info(path)
        if info.type == pafs.FileType.File and not keep:
            return [info], path.rsplit("/", 1)[0], True
        files = [f for f in store.get_file_info(pafs.FileSelector(path, recursive=True,
                                                                  allow_not_found=True))
                 if f.type == pafs.FileType.File and (not keep or any(
                     f.path[len(path) + 1:] == k or f.path[len(path) + 1:].startswith(k + "/")
                     for k in keep))]
    except OSError as exc:
        raise ConfigError(f"cannot read {uri}: {exc}") from None
    return files, path, False


def objects(uri: str, keep: tuple[str, ...] = ()) -> list[str]:
    """The URIs of the objects :func:`local_copy` copies (``keep`` as there), sorted; without
    reading them."""
    files, _, single = _listing(filesystem(), uri, keep)
    return [uri] if single else sorted(SCHEME + f.path for f in files)


def object_sha256(uri: str) -> str:
    """The sha256 of the object ``uri``'s bytes, streamed from the store (for the manifest's
    inputs).

    Raises:
        ConfigError: It cannot be read.
    """
    digest = hashlib.sha256()
    try:
        with filesystem().open_input_stream(_path(uri)) as fh:
            while chunk := fh.read(1 << 22):
                digest.update(chunk)
    except OSError as exc:
        raise ConfigError(f"cannot read {uri}: {exc}") from None
    return digest.hexdigest()


def object_digests(files: Iterable[Any]) -> dict[str, str]:
    """``{uri: sha256}`` of the ``s3://`` URIs among ``files`` (the manifest's inputs)."""
    return {uri: object_sha256(uri) for uri in map(object_uri, files) if uri is not None}


def local_copy(uri: str, keep: tuple[str, ...] = ()) -> Path | None:
    """A local copy of the object ``uri``, or of every object under ``uri/`` (a folder; with
    ``keep``, only those whose name under it is one of ``keep`` or lies in a folder of
    that name); None if there is nothing. Copies are kept per object version (size and
    time) and made whole before they are used (written aside, then renamed)."""
    store = filesystem()
    path = _path(uri)
    files, base, single = _listing(store, uri, keep)
    if not files:
        return None
    version = hashlib.sha256("\n".join(
        f"{f.path} {f.size} {f.mtime_ns}" for f in sorted(files, key=lambda f: f.path)
    ).encode()).hexdigest()[:24]
    target = _cache_root() / version
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        aside = Path(tempfile.mkdtemp(prefix=".partial-", dir=target.parent))
        try:
            for f in files:
                dest = aside / f.path[len(base):].lstrip("/")
                dest.parent.mkdir(parents=True, exist_ok=True)
                with store.open_input_stream(f.path) as src, dest.open("wb") as out:
                    while chunk := src.read(1 << 22):
                        out.write(chunk)
            try:
                os.rename(aside, target)
            except OSError:  # another process made it first
                import shutil

                shutil.rmtree(aside, ignore_errors=True)
        except BaseException:
            import shutil

            shutil.rmtree(aside, ignore_errors=True)
            raise
    if single:
        return target / path.rsplit("/", 1)[-1]
    return target
