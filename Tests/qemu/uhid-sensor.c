/* uhid-sensor: the device side both HID sensors of the QEMU harness share (uhid-sensor.h). */
#define _GNU_SOURCE
#include "uhid-sensor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct feature_state feature = { REPORTING_NONE, POWER_D4_OFF, 0, 1 };
int created;
unsigned long input_reads;
unsigned long feature_reads;
static int uhid_fd = -1;

void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

int powered(void)
{
	return feature.power_state == POWER_D0_FULL && feature.reporting_state == REPORTING_ALL;
}

double seconds_since(const struct timespec *start)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
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

int send_input_report(const uint8_t *report, size_t size)
{
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_INPUT2;
	memcpy(ev.u.input2.data, report, size);
	ev.u.input2.size = (uint16_t)size;
	return send_event(&ev);
}

static size_t encode_feature(uint8_t *buf)
{
	buf[0] = REPORT_ID;
	buf[1] = feature.reporting_state;
	buf[2] = feature.power_state;
	for (int b = 0; b < 4; b++)
		buf[3 + b] = (uint8_t)(feature.interval_ms >> (8 * b)); /* HID fields are little-endian */
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

static void create_device(const struct uhid_sensor *sensor)
{
	if (created) {
		say("error create: device exists");
		return;
	}
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_CREATE2;
	snprintf((char *)ev.u.create2.name, sizeof(ev.u.create2.name), "%s", sensor->name);
	snprintf((char *)ev.u.create2.phys, sizeof(ev.u.create2.phys), "%s", sensor->program);
	memcpy(ev.u.create2.rd_data, sensor->descriptor, sensor->descriptor_size);
	ev.u.create2.rd_size = (uint16_t)sensor->descriptor_size;
	ev.u.create2.bus = BUS_VIRTUAL;
	ev.u.create2.vendor = 0x1209; /* pid.codes, the open-source vendor id */
	ev.u.create2.product = sensor->product;
	if (send_event(&ev) == 0) {
		created = 1;
		feature = (struct feature_state){ REPORTING_NONE, POWER_D4_OFF, sensor->initial_interval_ms, 1 };
		say("created");
	}
}

static void destroy_device(const struct uhid_sensor *sensor)
{
	if (!created) {
		say("error destroy: no device");
		return;
	}
	if (sensor->before_destroy)
		sensor->before_destroy();
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_DESTROY;
	if (send_event(&ev) == 0) {
		created = 0;
		say("destroyed");
	}
}

static void answer_get_report(const struct uhid_sensor *sensor, const struct uhid_get_report_req *req)
{
	struct uhid_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = UHID_GET_REPORT_REPLY;
	ev.u.get_report_reply.id = req->id;
	if (req->rnum != REPORT_ID) {
		ev.u.get_report_reply.err = EINVAL;
	} else if (req->rtype == UHID_FEATURE_REPORT) {
		ev.u.get_report_reply.size = (uint16_t)encode_feature(ev.u.get_report_reply.data);
		feature_reads++;
	} else if (req->rtype == UHID_INPUT_REPORT) {
		ev.u.get_report_reply.size = (uint16_t)sensor->encode_input(ev.u.get_report_reply.data);
		input_reads++;
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
		    before.interval_ms != feature.interval_ms || before.sensitivity != feature.sensitivity)
			say("feature power=%s reporting=%s interval_ms=%u sensitivity=%u",
			    feature.power_state == POWER_D0_FULL ? "on" : "off",
			    feature.reporting_state == REPORTING_ALL ? "all" : "none",
			    feature.interval_ms, feature.sensitivity);
	} else {
		ev.u.set_report_reply.err = EINVAL;
	}
	send_event(&ev);
}

static void read_uhid_event(const struct uhid_sensor *sensor)
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
	case UHID_OPEN: say("opened"); break;
	case UHID_CLOSE: say("closed"); break;
	case UHID_GET_REPORT: answer_get_report(sensor, &ev.u.get_report); break;
	case UHID_SET_REPORT: answer_set_report(&ev.u.set_report); break;
	default: break;
	}
}

/* Returns 0 to go on, 1 to quit. */
static int run_command(const struct uhid_sensor *sensor, char *line)
{
	line[strcspn(line, "\r\n")] = 0;
	if (strcmp(line, "create") == 0)
		create_device(sensor);
	else if (strcmp(line, "destroy") == 0)
		destroy_device(sensor);
	else if (strcmp(line, "quit") == 0)
		return 1;
	else if (line[0] && sensor->run_command(line) != 0)
		say("error unknown command: %s", line);
	return 0;
}

int uhid_sensor_open(const struct uhid_sensor *sensor)
{
	signal(SIGPIPE, SIG_IGN);
	feature.interval_ms = sensor->initial_interval_ms;
	uhid_fd = open("/dev/uhid", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (uhid_fd < 0) {
		fprintf(stderr, "%s: cannot open /dev/uhid: %s\n", sensor->program, strerror(errno));
		return -1;
	}
	return 0;
}

int uhid_sensor_run(const struct uhid_sensor *sensor)
{
	char command[256];
	size_t command_len = 0;
	int stdin_open = 1, status = 0;
	for (;;) {
		double wait_s = sensor->send_due_reports();
		struct pollfd fds[2] = {
			{ .fd = uhid_fd, .events = POLLIN },
			{ .fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN },
		};
		struct timespec timeout = { 0, 0 };
		if (wait_s >= 0) {
			timeout.tv_sec = (time_t)wait_s;
			timeout.tv_nsec = (long)((wait_s - (double)timeout.tv_sec) * 1e9);
		}
		if (ppoll(fds, 2, wait_s >= 0 ? &timeout : NULL, NULL) < 0) {
			if (errno == EINTR)
				continue;
			say("error poll: %s", strerror(errno));
			status = 1;
			break;
		}
		if (fds[0].revents & POLLIN)
			read_uhid_event(sensor);
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
				if (run_command(sensor, command))
					break;
			} else {
				command[command_len++] = c;
			}
		}
	}
	if (created)
		destroy_device(sensor);
	close(uhid_fd);
	return status;
}
