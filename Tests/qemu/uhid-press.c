/*
 * uhid-press: a HID sensor-hub barometer made in user space through /dev/uhid, for the QEMU harness.
 *
 * The kernel's hid-sensor-hub binds it and hid-sensor-press turns it into a real IIO device ("press")
 * with in_pressure_raw, in_pressure_scale (kPa per count) and in_pressure_sampling_frequency. This program
 * plays the device's side: it answers the driver's GET_REPORT/SET_REPORT requests (power state, reporting
 * state, report interval, sensitivity; the input report for a raw read) and, while the driver has it
 * powered (D0, all events), sends the pressure it holds at the report interval, as a real sensor does.
 *
 * Report descriptor after the HID Sensor Usages (HUTRR39) and include/linux/hid-sensor-ids.h: Sensors page,
 * Environmental: Atmospheric Pressure (0x31) in a physical collection; feature fields reporting state and
 * power state (named arrays), report interval (ms), change sensitivity absolute of atmospheric pressure;
 * input field Data: Atmospheric Pressure (0x431), 32 bits. No unit item: the spec's default unit is the bar,
 * and with unit exponent -5 one count is 1e-5 bar = 1 Pa, so the driver publishes in_pressure_scale 0.001
 * (hid-sensor-attributes: 100 kPa a bar, times 1e-5).
 *
 * Test tool, not product code. Line commands on stdin (the guest's init writes them into a FIFO); every
 * state change is one line on stdout.
 *   create      create the HID device (UHID_CREATE2)
 *   destroy     destroy it (hot-unplug; the kernel removes the IIO device)
 *   set KPA     hold this pressure (kPa) from now on
 *   quit        destroy and exit
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/uhid.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPORT_ID 1
/* Selector values as the kernel writes them (index in the list plus the logical minimum 1): see uhid-accel.c. */
#define POWER_D0_FULL 2
#define POWER_D4_OFF 6
#define REPORTING_ALL 2
#define REPORTING_NONE 1

static const uint8_t report_descriptor[] = {
	0x05, 0x20,             /* Usage Page (Sensors) */
	0x09, 0x31,             /* Usage (Environmental: Atmospheric Pressure) */
	0xA1, 0x00,             /* Collection (Physical) */
	0x85, REPORT_ID,        /*   Report ID */
	/* Feature report, field 0: reporting state (named array) */
	0x0A, 0x16, 0x03,       /*   Usage (Property: Reporting State) */
	0x15, 0x01, 0x25, 0x06, /*   Logical Minimum (1), Logical Maximum (6) */
	0x75, 0x08, 0x95, 0x01, /*   Report Size (8), Report Count (1) */
	0xA1, 0x02,             /*   Collection (Logical) */
	0x0A, 0x40, 0x08,       /*     No Events */
	0x0A, 0x41, 0x08,       /*     All Events */
	0x0A, 0x42, 0x08,       /*     Threshold Events */
	0x0A, 0x43, 0x08,       /*     No Events Wake */
	0x0A, 0x44, 0x08,       /*     All Events Wake */
	0x0A, 0x45, 0x08,       /*     Threshold Events Wake */
	0xB1, 0x00,             /*     Feature (Data, Array, Absolute) */
	0xC0,                   /*   End Collection */
	/* Feature report, field 1: power state (named array) */
	0x0A, 0x19, 0x03,       /*   Usage (Property: Power State) */
	0x15, 0x01, 0x25, 0x06,
	0x75, 0x08, 0x95, 0x01,
	0xA1, 0x02,             /*   Collection (Logical) */
	0x0A, 0x50, 0x08,       /*     Undefined */
	0x0A, 0x51, 0x08,       /*     D0 Full Power */
	0x0A, 0x52, 0x08,       /*     D1 Low Power */
	0x0A, 0x53, 0x08,       /*     D2 Standby with Wake */
	0x0A, 0x54, 0x08,       /*     D3 Sleep with Wake */
	0x0A, 0x55, 0x08,       /*     D4 Power Off */
	0xB1, 0x00,             /*     Feature (Data, Array, Absolute) */
	0xC0,                   /*   End Collection */
	/* Feature report, field 2: report interval in ms (no unit item: the driver's default unit) */
	0x0A, 0x0E, 0x03,       /*   Usage (Property: Report Interval) */
	0x15, 0x00, 0x27, 0xFF, 0xFF, 0xFF, 0x7F,
	0x75, 0x20, 0x95, 0x01, 0x55, 0x00,
	0xB1, 0x02,             /*   Feature (Data, Variable, Absolute) */
	/* Feature report, field 3: change sensitivity (absolute) of atmospheric pressure, 1 Pa */
	0x0A, 0x31, 0x14,       /*   Usage (Atmospheric Pressure | Change Sensitivity Absolute) */
	0x15, 0x00, 0x26, 0xFF, 0x7F,
	0x75, 0x10, 0x95, 0x01, 0x55, 0x0B,
	0xB1, 0x02,             /*   Feature (Data, Variable, Absolute) */
	/* Input report: atmospheric pressure, 32-bit counts of 1e-5 bar (1 Pa) */
	0x0A, 0x31, 0x04,       /*   Usage (Data: Atmospheric Pressure) */
	0x15, 0x00, 0x27, 0xFF, 0xFF, 0xFF, 0x7F,
	0x75, 0x20, 0x95, 0x01, 0x55, 0x0B,
	0x81, 0x02,             /*   Input (Data, Variable, Absolute) */
	0xC0,                   /* End Collection */
};

struct feature_state {
	uint8_t reporting_state;
	uint8_t power_state;
	uint32_t interval_ms;
	uint16_t sensitivity;
};

static int uhid_fd = -1;
static int created;
static struct feature_state feature = { REPORTING_NONE, POWER_D4_OFF, 100, 1 };
static uint32_t pascal = 101325;
static struct timespec next_report;
static unsigned long reports_sent, reads_answered;

static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int send_event(struct uhid_event *ev)
{
	ssize_t n = write(uhid_fd, ev, sizeof(*ev));
	if (n != (ssize_t)sizeof(*ev)) {
		say("error write-uhid type=%u: %s", ev->type, n < 0 ? strerror(errno) : "short write");
		return -1;
	}
	return 0;
}

static size_t encode_input(uint8_t *buf)
{
	buf[0] = REPORT_ID;
	for (int b = 0; b < 4; b++)
		buf[1 + b] = (uint8_t)(pascal >> (8 * b)); /* HID fields are little-endian */
	return 5;
}

static size_t encode_feature(uint8_t *buf)
{
	buf[0] = REPORT_ID;
	buf[1] = feature.reporting_state;
	buf[2] = feature.power_state;
	for (int b = 0; b < 4; b++)
		buf[3 + b] = (uint8_t)(feature.interval_ms >> (8 * b));
	buf[7] = (uint8_t)feature.sensitivity;
	buf[8] = (uint8_t)(feature.sensitivity >> 8);
	return 9;
}

static void decode_feature(const uint8_t *buf, size_t size)
{
	if (size < 9 || buf[0] != REPORT_ID)
		return;
	feature.reporting_state = buf[1];
	feature.power_state = buf[2];
	feature.interval_ms = (uint32_t)buf[3] | (uint32_t)buf[4] << 8 | (uint32_t)buf[5] << 16 | (uint32_t)buf[6] << 24;
	feature.sensitivity = (uint16_t)(buf[7] | buf[8] << 8);
}

static void create_device(void)
{
	if (created) {
		say("error create: device exists");
		return;
	}
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_CREATE2;
	snprintf((char *)ev.u.create2.name, sizeof(ev.u.create2.name), "stepd-test HID sensor hub barometer");
	snprintf((char *)ev.u.create2.phys, sizeof(ev.u.create2.phys), "uhid-press");
	memcpy(ev.u.create2.rd_data, report_descriptor, sizeof(report_descriptor));
	ev.u.create2.rd_size = sizeof(report_descriptor);
	ev.u.create2.bus = BUS_VIRTUAL;
	ev.u.create2.vendor = 0x1209;  /* pid.codes, the open-source vendor id */
	ev.u.create2.product = 0x0002; /* pid.codes' second test product id */
	if (send_event(&ev) == 0) {
		created = 1;
		feature = (struct feature_state){ REPORTING_NONE, POWER_D4_OFF, 100, 1 };
		say("created");
	}
}

static void destroy_device(void)
{
	if (!created) {
		say("error destroy: no device");
		return;
	}
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_DESTROY;
	if (send_event(&ev) == 0) {
		created = 0;
		say("destroyed reports=%lu reads=%lu", reports_sent, reads_answered);
	}
}

static int powered(void)
{
	return feature.power_state == POWER_D0_FULL && feature.reporting_state == REPORTING_ALL;
}

static double seconds_until(const struct timespec *when)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(when->tv_sec - now.tv_sec) + (double)(when->tv_nsec - now.tv_nsec) / 1e9;
}

/* While powered, reports the held pressure at the report interval; returns seconds until the next one,
 * or -1 when the device is silent. */
static double send_due_report(void)
{
	if (!created || !powered())
		return -1;
	double interval_s = (feature.interval_ms ? feature.interval_ms : 100) / 1000.0;
	double wait_s = seconds_until(&next_report);
	if (wait_s < -interval_s) { /* just powered on: start the cadence now */
		clock_gettime(CLOCK_MONOTONIC, &next_report);
		wait_s = 0;
	}
	if (wait_s <= 0) {
		struct uhid_event ev;
		memset(&ev, 0, sizeof(ev));
		ev.type = UHID_INPUT2;
		ev.u.input2.size = (uint16_t)encode_input(ev.u.input2.data);
		if (send_event(&ev) == 0)
			reports_sent++;
		long ns = next_report.tv_nsec + (long)(interval_s * 1e9);
		next_report.tv_sec += ns / 1000000000L;
		next_report.tv_nsec = ns % 1000000000L;
		wait_s += interval_s;
	}
	return wait_s > 0 ? wait_s : 0;
}

static void answer_get_report(const struct uhid_get_report_req *req)
{
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_GET_REPORT_REPLY;
	ev.u.get_report_reply.id = req->id;
	if (req->rnum != REPORT_ID) {
		ev.u.get_report_reply.err = EINVAL;
	} else if (req->rtype == UHID_FEATURE_REPORT) {
		ev.u.get_report_reply.size = (uint16_t)encode_feature(ev.u.get_report_reply.data);
	} else if (req->rtype == UHID_INPUT_REPORT) {
		ev.u.get_report_reply.size = (uint16_t)encode_input(ev.u.get_report_reply.data);
		reads_answered++;
	} else {
		ev.u.get_report_reply.err = EINVAL;
	}
	send_event(&ev);
}

static void answer_set_report(const struct uhid_set_report_req *req)
{
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_SET_REPORT_REPLY;
	ev.u.set_report_reply.id = req->id;
	if (req->rnum == REPORT_ID && req->rtype == UHID_FEATURE_REPORT && req->size >= 9) {
		struct feature_state before = feature;
		decode_feature(req->data, req->size);
		if (before.power_state != feature.power_state || before.reporting_state != feature.reporting_state ||
		    before.interval_ms != feature.interval_ms)
			say("feature power=%s reporting=%s interval_ms=%u",
			    feature.power_state == POWER_D0_FULL ? "on" : "off",
			    feature.reporting_state == REPORTING_ALL ? "all" : "none", feature.interval_ms);
	} else {
		ev.u.set_report_reply.err = EINVAL;
	}
	send_event(&ev);
}

static void read_uhid_event(void)
{
	struct uhid_event ev;
	ssize_t n = read(uhid_fd, &ev, sizeof(ev));
	if (n <= 0) {
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			say("error read-uhid: %s", strerror(errno));
		return;
	}
	switch (ev.type) {
	case UHID_START: say("started"); break;
	case UHID_STOP: say("stopped"); break;
	case UHID_GET_REPORT: answer_get_report(&ev.u.get_report); break;
	case UHID_SET_REPORT: answer_set_report(&ev.u.set_report); break;
	default: break;
	}
}

/* Returns 0 to go on, 1 to quit. */
static int run_command(char *line)
{
	double kpa;
	line[strcspn(line, "\r\n")] = 0;
	if (sscanf(line, "set %lf", &kpa) == 1 && kpa > 0 && kpa < 2000) {
		pascal = (uint32_t)lround(kpa * 1000);
		say("holding %u Pa", pascal);
	} else if (strcmp(line, "create") == 0) {
		create_device();
	} else if (strcmp(line, "destroy") == 0) {
		destroy_device();
	} else if (strcmp(line, "quit") == 0) {
		return 1;
	} else if (line[0]) {
		say("error unknown command: %s", line);
	}
	return 0;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	uhid_fd = open("/dev/uhid", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (uhid_fd < 0) {
		fprintf(stderr, "uhid-press: cannot open /dev/uhid: %s\n", strerror(errno));
		return 1;
	}
	say("ready");
	char command[256];
	size_t command_len = 0;
	int stdin_open = 1;
	for (;;) {
		double wait_s = send_due_report();
		struct pollfd fds[2] = {
			{ .fd = uhid_fd, .events = POLLIN },
			{ .fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN },
		};
		struct timespec timeout = { (time_t)(wait_s > 0 ? wait_s : 0), 0 };
		if (wait_s > 0)
			timeout.tv_nsec = (long)((wait_s - (double)timeout.tv_sec) * 1e9);
		int ready = ppoll(fds, 2, wait_s >= 0 ? &timeout : NULL, NULL);
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			say("error poll: %s", strerror(errno));
			return 1;
		}
		if (fds[0].revents & POLLIN)
			read_uhid_event();
		if (fds[1].revents & (POLLIN | POLLHUP)) {
			char c;
			ssize_t n = read(STDIN_FILENO, &c, 1);
			if (n <= 0) {
				stdin_open = 0; /* the writer went away: keep serving the device until killed */
				continue;
			}
			if (c == '\n' || command_len == sizeof(command) - 1) {
				command[command_len] = 0;
				command_len = 0;
				if (run_command(command))
					break;
			} else {
				command[command_len++] = c;
			}
		}
	}
	if (created)
		destroy_device();
	close(uhid_fd);
	return 0;
}
