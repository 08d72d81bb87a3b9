"""Ray's notice that it turned token authentication on by default stays off the terminal; its other warnings and
errors do not (:func:`mechanisms.execution.backends._without_token_notice`)."""

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mechanisms.execution import backends

#: Ray 2.60's own words (ray/_private/authentication/authentication_token_setup.py and authentication_constants.py).
ENABLED = ("Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out. For more "
           "information, see https://docs.ray.io/en/latest/ray-security/token-auth.html")
DISABLED = ("Token authentication is disabled for this Ray cluster. Anyone with network access to the cluster can run "
            "arbitrary code and access its data.")
NO_TOKEN = "Token authentication is enabled but no authentication token was found"


class _Kept(logging.Handler):
    """The messages that pass the logger's filters (a handler on the logger itself: Ray's "ray" logger may not
    propagate to the root, where pytest's caplog listens)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_only_the_notice_that_token_authentication_is_on_is_dropped_and_only_while_ray_starts():
    logger = logging.getLogger(backends._RAY_TOKEN_LOGGER)
    kept, level = _Kept(), logger.level
    logger.addHandler(kept)
    logger.setLevel(logging.DEBUG)
    try:
        with backends._without_token_notice():
            logger.warning(ENABLED)
            logger.warning(DISABLED)
            logger.error(NO_TOKEN)
        logger.warning(ENABLED)
    finally:
        logger.removeHandler(kept)
        logger.setLevel(level)
    assert kept.messages == [DISABLED, NO_TOKEN, ENABLED]
    assert not logger.filters


@pytest.mark.integration
@pytest.mark.ray
def test_a_local_ray_started_by_the_backend_does_not_print_the_notice(tmp_path):
    """A fresh interpreter, as a user's (``RAY_AUTH_MODE`` unset; its own home, so that Ray writes its token there),
    starts the backend's local Ray on 1 CPU: Ray logs the notice (a filter added before the backend's sees it), and
    neither stream shows it."""
    pytest.importorskip("ray")
    script = tmp_path / "start_ray.py"
    script.write_text(textwrap.dedent("""
        import json
        import logging

        from mechanisms.execution import backends
        from mechanisms.execution.worker import MechanismReference

        seen = []


        class Seen(logging.Filter):
            def filter(self, record):
                seen.append(record.getMessage())
                return True


        logging.getLogger(backends._RAY_TOKEN_LOGGER).addFilter(Seen())
        backend = backends.RayBackend(MechanismReference("laplace_sum", "catalog:laplace_sum"), None, 1)
        slots = backend.slots
        backend.close()
        print(json.dumps({"seen": seen, "slots": slots}))
    """), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "RAY_AUTH_MODE"}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["slots"] == 1
    assert [m for m in result["seen"] if m.startswith(backends.RAY_TOKEN_NOTICE)], result["seen"]
    printed = done.stdout.splitlines()[:-1]  # all but the script's own line, which quotes what it saw
    assert backends.RAY_TOKEN_NOTICE not in done.stderr and not any(backends.RAY_TOKEN_NOTICE in p for p in printed)
