"""Never reads its input: a runner that writes a long request blocks, unless its
write has a deadline."""

import time

time.sleep(1000)
