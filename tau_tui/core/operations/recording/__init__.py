"""Record and replay of a session (`tau-tui --record FILE`, `tau-tui --replay FILE`): format, writer, reader, clock, replay backend."""
