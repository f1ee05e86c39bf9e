"""Drives one pure-Python ADB client against a device for tests/integration/sim_clients.rs.

    python3 bridge.py adbutils|ppadb PORT SERIAL

Reads one JSON request per line on stdin and answers one JSON line on stdout, so the Rust test
decides what to call and compares every answer with the app model and the truth log:

    {"call": "window_size", "args": [], "kwargs": {}}   -> {"ok": [1080, 2400]}
    {"call": "sync.stat", "args": ["/sdcard"]}          (a dotted path reaches sub-objects)
    {"get": "brightness_value"} / {"set": "brightness_value", "value": 128}
    {"methods": true}                                   -> {"ok": ["app_current", ...]}
    {"stop": true} / {"settle": true}                   tell the adbutils.logcat() copies to stop /
                                                        wait (10 s at most) until they have
    any failure                                         -> {"error": {"type": "AdbError", "message": "..."}}

Exit status 3 (with a line on stderr) when the client is not installed.
"""

import dataclasses
import datetime
import enum
import io
import json
import os
import sys
import time
import warnings


def connect(client, port, serial):
    if client == "adbutils":
        import adbutils

        # adb_output() runs the adb binary bundled with adbutils: point it at this server.
        os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)
        return adbutils.AdbClient(host="127.0.0.1", port=port).device(serial)
    if client == "ppadb":
        from ppadb.client import Client

        device = Client(host="127.0.0.1", port=port).device(serial)
        if device is None:
            raise SystemExit(f"ppadb does not list {serial}")
        return device
    raise SystemExit(f"unknown client {client}")


def encode(value):
    """A JSON-able picture of whatever a client method returned."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        picture = {"bytes": len(value), "head": bytes(value[:8]).hex()}
        try:
            from PIL import Image

            with Image.open(io.BytesIO(bytes(value))) as image:
                picture["image"] = [image.format, image.width, image.height]
        except Exception:  # not an image: the length and head say enough
            pass
        return picture
    if type(value).__module__.startswith("PIL."):
        return {"image": [value.mode, value.width, value.height]}
    if dataclasses.is_dataclass(value):
        return encode(dataclasses.asdict(value))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [encode(v) for v in value]
    if hasattr(value, "close") and hasattr(value, "send"):
        value.close()  # a connection (open_shell, shell(stream=True)): proof enough it opened
        return {"connection": type(value).__name__}
    if type(value).__name__ == "StopEvent":  # adbutils.logcat(): its copy runs until told
        # {"stop": true} tells it; the client's thread looks at the flag after each line it
        # reads, so it ends at the next line the device logs; {"settle": true} waits for that.
        RUNNING.append(value)
        return {"running": not value.is_done()}
    if hasattr(value, "__dict__"):
        return {k: encode(v) for k, v in vars(value).items() if not k.startswith("_")}
    return repr(value)


def public_methods(device):
    names = set()
    for klass in type(device).__mro__:
        if klass is object:
            continue
        for name, attribute in vars(klass).items():
            if not name.startswith("_") and (callable(attribute) or isinstance(attribute, property)):
                names.add(name)
    return sorted(names)


def resolve(device, path):
    target = device
    for part in path.split("."):
        target = getattr(target, part)
    return target


# The adbutils.logcat() copies still running.
RUNNING = []


def stop():
    for event in RUNNING:
        event.stop_nowait()
    return len(RUNNING)


def settle():
    """Waits (at most 10 s) for every logcat copy to end; raises if one does not."""
    deadline = time.monotonic() + 10
    while RUNNING:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(RUNNING)} logcat copies still running")
        RUNNING[:] = [event for event in RUNNING if not event.is_done()]
        time.sleep(0.01)
    return True


def handle(device, request):
    if request.get("methods"):
        return public_methods(device)
    if request.get("stop"):
        return stop()
    if request.get("settle"):
        return settle()
    if "get" in request:
        return resolve(device, request["get"])
    if "set" in request:
        owner, _, name = request["set"].rpartition(".")
        target = resolve(device, owner) if owner else device
        value = request["value"]
        current = getattr(target, name)
        if isinstance(current, enum.Enum):  # JSON carries the enum's value
            value = type(current)(value)
        setattr(target, name, value)
        return None
    args = request.get("args", [])
    kwargs = request.get("kwargs", {})
    return resolve(device, request["call"])(*args, **kwargs)


def main():
    client, port, serial = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    # Some client methods print; only answers may reach the test's pipe.
    answers, sys.stdout = sys.stdout, sys.stderr
    warnings.simplefilter("ignore")  # deprecated methods are still methods to try
    try:
        device = connect(client, port, serial)
    except ImportError as err:
        print(f"{client} is not installed: {err}", file=sys.stderr)
        return 3
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = {"ok": encode(handle(device, json.loads(line)))}
        except BaseException as err:  # the test wants every failure, even SystemExit
            answer = {"error": {"type": type(err).__name__, "message": str(err)}}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
