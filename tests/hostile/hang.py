"""Never reads stdin, never writes, never exits on its own."""

import time

while True:
    time.sleep(1)
