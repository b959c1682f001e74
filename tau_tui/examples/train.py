"""Example training script: prints progress so the log view has something to follow."""

import os
import time

steps = int(os.environ.get("STEPS", "20"))
for step in range(steps):
    print(f"step {step + 1}/{steps} loss={1.0 / (step + 1):.4f}", flush=True)
    time.sleep(0.5)
print("done", flush=True)
