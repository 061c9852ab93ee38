# stepd: `make run` sets up and starts the daemon on its embedded default; `make test` sets up and runs every test.
SWIFT ?= swift
CONFIG ?= release

.PHONY: all setup build run test unit-tests integration-tests clean

all: build

setup:
	scripts/setup --no-build

build: setup
	$(SWIFT) build -c $(CONFIG)

# A live step count from the first accelerometer, else from the bundled real recording.
run: build
	.build/$(CONFIG)/stepd $(ARGS)

# Everything: unit tests, integration tests against the real binaries, libiio, gpsd (and QEMU when present).
test: setup
	scripts/test

clean:
	rm -rf .build
