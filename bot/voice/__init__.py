"""Voice: receiving a nominee's last word, writing it as Ogg Opus, preparing uploads."""
