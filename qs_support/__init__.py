"""Support for QUICstep's lab tests and measurement tools: what they share (measured values
reported the same way, logs and captures kept when a test fails)."""
