"""``python -m bot`` is ``mafia-bot``."""

import sys

from bot.cli import main

sys.exit(main())
