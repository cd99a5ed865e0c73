"""The test suite.

Imported before any test module: it points ``XDG_STATE_HOME`` at a temporary directory, so the
proxy's default state (the stored responses of ``/v1/responses``) never lands in the home
directory of whoever runs the tests — neither from the servers started in this process nor
from the ``shieldgate`` subprocesses, which inherit the variable.
"""

import atexit
import os
import shutil
import tempfile

_STATE_HOME = tempfile.mkdtemp(prefix="shieldgate-tests-state-")
os.environ["XDG_STATE_HOME"] = _STATE_HOME
atexit.register(shutil.rmtree, _STATE_HOME, ignore_errors=True)
