// Integration tests wait on real servers and durable timers.
jest.setTimeout(90_000);
