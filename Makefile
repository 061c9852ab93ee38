# stepd: `make run` sets up and starts the daemon on the bundled recording (--demo); `make test` sets up and runs every test.
# `make build` makes the release program, the daemon linked for memory with its running code laid out together
# (Package.swift, Sources/stepd/stepd.order made by tools/order-file; docs/iio.md "Memory"). It is one program:
# stepctl and stepd-web are links to stepd, which runs the one its name says (scripts/link-programs).
# `make build`, `make run` and `make deb` install only what building needs (scripts/setup --build);
# `make test` installs the test tools too (scripts/setup --test).
# `make deb` makes the Debian package from the release binaries (tools/make-deb).
SWIFT ?= swift
CONFIG ?= release

.PHONY: all setup setup-test build run test test-shifted test-tsan test-asan test-ha clean deb

all: build

setup:
	scripts/setup --build --no-build

setup-test:
	scripts/setup --test --no-build

build: setup
	$(SWIFT) build -c $(CONFIG)
	scripts/link-programs .build/$(CONFIG)

# A live step count at once: the bundled real recording as a demo (its history is thrown away at exit).
# A board's real accelerometer: `.build/release/stepd` without --demo, or the installed service.
# stepctl is not on PATH in a checkout: the daemon's "try stepctl ..." line names the one beside it.
run: build
	.build/$(CONFIG)/stepd --demo $(ARGS) | sed -u 's|try   stepctl |try   .build/$(CONFIG)/stepctl |'


# Everything: unit tests, integration tests against the real binaries, libiio, gpsd (and QEMU when present).
test: setup-test
	scripts/test

# The unit and integration tests on another day: every test process and the daemons it starts see a
# clock moved to WHEN (default: more than a year ahead, just before a daylight-saving change; scripts/test).
test-shifted: setup-test
	scripts/test --shifted $(WHEN)

# The suites that drive the daemon, and the daemon itself under load for a minute, built with ThreadSanitizer
# (.build-tsan) or AddressSanitizer + LeakSanitizer (.build-asan); any report fails (scripts/test-sanitized,
# docs/testing.md). ARGS: e.g. `--soak 300`, or class names to run only those.
test-tsan: setup-test
	scripts/test-sanitized thread $(ARGS)

test-asan: setup-test
	scripts/test-sanitized address $(ARGS)

# What stepd publishes for Home Assistant, judged by Home Assistant 2024.3.3's own code (scripts/test-ha): a venv
# in .build/ha-venv made once from PyPI (about 5 minutes), then a replay captured from a local mosquitto (about
# 100 s) and checked (1 s). Not in `make test`: it costs more than a minute even once the venv is there.
test-ha: setup-test
	$(SWIFT) build --product stepd
	scripts/test-ha

clean:
	rm -rf .build .build-tsan .build-asan

# The Debian package, stepd_<version>_<arch>.deb, from the release build: debian/rules (debhelper), then lintian
# (tools/make-deb). The same command on an arm64 board with Swift makes the arm64 package.
deb: build
	scripts/setup --deb --no-build
	tools/make-deb

# Installation: `make build && sudo make install`; packagers add DESTDIR=/path/to/staging. The program is
# installed stripped (STRIP=, e.g. aarch64-linux-gnu-strip for another architecture's build; STRIP=true keeps
# the symbols); stepctl and stepd-web are links to it.
# Units, udev rules and sysusers go where systemd looks for a prefix's files ($(PREFIX)/lib/...);
# the configuration lives in /etc whatever the prefix, as stepd.service reads it there.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
SYSCONFDIR ?= /etc
LIBDIR_SYSTEMD ?= $(PREFIX)/lib
UNITDIR ?= $(LIBDIR_SYSTEMD)/systemd/system
SYSUSERSDIR ?= $(LIBDIR_SYSTEMD)/sysusers.d
UDEVRULESDIR ?= $(LIBDIR_SYSTEMD)/udev/rules.d
BUILT ?= .build/$(CONFIG)
INSTALL ?= install
STRIP ?= strip
# Swift's crash backtracer for the statically linked stepd, from the toolchain that built it (stepd(8), SIGNALS):
# stepd looks for it in ../libexec/stepd beside its binary.
LIBEXECDIR ?= $(PREFIX)/libexec
BACKTRACER ?= $(shell p=$$(command -v swift 2>/dev/null) && echo $$(dirname $$(readlink -f $$p))/../libexec/swift/linux/swift-backtrace-static)
# stepd-web's page (Leaflet comes from Debian's libjs-leaflet, not from here).
WEB_PAGE = $(wildcard Sources/stepd-web/Public/*)

.PHONY: install uninstall print-backtracer

# scripts/test puts the same helper beside the release build it tests.
print-backtracer:
	@echo $(BACKTRACER)

install:
	@test -x $(BUILT)/stepd || { echo "make install: no stepd in $(BUILT); run 'make build' (or pass CONFIG=debug)" >&2; exit 1; }
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(UDEVRULESDIR) \
		$(DESTDIR)$(DATADIR)/stepd $(DESTDIR)$(DATADIR)/stepd-web $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(SYSCONFDIR)/stepd
	$(INSTALL) -m 0755 -s --strip-program=$(STRIP) $(BUILT)/stepd $(DESTDIR)$(BINDIR)/stepd
	ln -sfn stepd $(DESTDIR)$(BINDIR)/stepctl
	ln -sfn stepd $(DESTDIR)$(BINDIR)/stepd-web
	if [ -x "$(BACKTRACER)" ]; then $(INSTALL) -d $(DESTDIR)$(LIBEXECDIR)/stepd && \
		$(INSTALL) -m 0755 -s --strip-program=$(STRIP) $(BACKTRACER) $(DESTDIR)$(LIBEXECDIR)/stepd/swift-backtrace-static; \
	else echo "make install: no swift-backtrace-static (BACKTRACER=...): a crash of stepd will leave no backtrace" >&2; fi
	# stepd-web.service is installed but not enabled: the dashboard is off until `systemctl enable --now stepd-web`.
	for unit in stepd.service stepd.socket stepd-web.service; do \
		sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DATADIR@|$(DATADIR)|g' systemd/$$unit > $(DESTDIR)$(UNITDIR)/$$unit.tmp && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit.tmp && mv $(DESTDIR)$(UNITDIR)/$$unit.tmp $(DESTDIR)$(UNITDIR)/$$unit || exit 1; \
	done
	$(INSTALL) -m 0644 systemd/stepd.sysusers $(DESTDIR)$(SYSUSERSDIR)/stepd.conf
	$(INSTALL) -m 0644 systemd/stepd-web.sysusers $(DESTDIR)$(SYSUSERSDIR)/stepd-web.conf
	$(INSTALL) -m 0644 $(WEB_PAGE) $(DESTDIR)$(DATADIR)/stepd-web/
	$(INSTALL) -m 0644 udev/60-stepd.rules $(DESTDIR)$(UDEVRULESDIR)/60-stepd.rules
	$(INSTALL) -m 0644 udev/81-stepd-no-sensor-proxy.rules.example $(DESTDIR)$(DATADIR)/stepd/
	$(INSTALL) -m 0644 data/walk-inhand.csv.gz data/README.md $(DESTDIR)$(DATADIR)/stepd/
	$(INSTALL) -m 0644 docs/man/stepd.8 $(DESTDIR)$(MANDIR)/man8/stepd.8
	$(INSTALL) -m 0644 docs/man/stepctl.1 docs/man/stepd-web.1 $(DESTDIR)$(MANDIR)/man1/
	# The configuration names the paths of this installation (the package's: /usr/share/stepd/...).
	sed -e 's|/usr/local/share/|$(DATADIR)/|g' docs/stepd.conf.example > $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf.example.tmp && \
		chmod 0644 $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf.example.tmp && \
		mv $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf.example.tmp $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf.example
	# An existing stepd.conf is the administrator's: never overwrite it.
	test -e $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf || $(INSTALL) -m 0644 $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf.example $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf
	@if [ -z "$(DESTDIR)" ]; then \
		echo "Installed. To start: systemd-sysusers; udevadm control --reload; systemctl daemon-reload;"; \
		echo "  systemctl enable --now stepd.socket stepd.service   (see docs/service.md)"; \
		echo "  the web dashboard, off by default: systemctl enable --now stepd-web   (see docs/web.md)"; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/stepd $(DESTDIR)$(BINDIR)/stepctl $(DESTDIR)$(BINDIR)/stepd-web
	rm -f $(DESTDIR)$(LIBEXECDIR)/stepd/swift-backtrace-static
	-rmdir $(DESTDIR)$(LIBEXECDIR)/stepd
	rm -f $(DESTDIR)$(UNITDIR)/stepd.service $(DESTDIR)$(UNITDIR)/stepd.socket $(DESTDIR)$(UNITDIR)/stepd-web.service
	rm -f $(DESTDIR)$(SYSUSERSDIR)/stepd.conf $(DESTDIR)$(SYSUSERSDIR)/stepd-web.conf $(DESTDIR)$(UDEVRULESDIR)/60-stepd.rules
	rm -f $(addprefix $(DESTDIR)$(DATADIR)/stepd-web/,$(notdir $(WEB_PAGE)))
	-rmdir $(DESTDIR)$(DATADIR)/stepd-web
	rm -f $(DESTDIR)$(DATADIR)/stepd/81-stepd-no-sensor-proxy.rules.example
	rm -f $(DESTDIR)$(DATADIR)/stepd/walk-inhand.csv.gz $(DESTDIR)$(DATADIR)/stepd/README.md
	-rmdir $(DESTDIR)$(DATADIR)/stepd
	rm -f $(DESTDIR)$(MANDIR)/man8/stepd.8 $(DESTDIR)$(MANDIR)/man1/stepctl.1 $(DESTDIR)$(MANDIR)/man1/stepd-web.1
	# stepd.conf stays if the administrator changed it; the history in /var/lib/stepd always stays.
	if cmp -s $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf.example; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf; fi
	rm -f $(DESTDIR)$(SYSCONFDIR)/stepd/stepd.conf.example
	-rmdir $(DESTDIR)$(SYSCONFDIR)/stepd
