#include "cgps.h"

#include <errno.h>
#include <fcntl.h>
#include <gps.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

// libgps API 9 (gpsd 3.20) or later: gps_read copies each report's JSON into a buffer (API 7), and the fix's
// time is a timespec with altMSL/altHAE beside it (API 9). Debian 12's libgps is API 11. An older libgps fails
// here, clearly, rather than building a shim that cannot read a report.
#if GPSD_API_MAJOR_VERSION < 9
#error "stepd needs libgps API 9 or later (gpsd 3.20 or later)"
#endif

struct cgps_session {
    struct gps_data_t data;
    // gps_read copies the report's JSON here, for the caller to tell a TPV from the rest
    // (gps_data_t.set accumulates bits across reports, so it cannot).
    char message[8192];
};

static const char *failure_text(int code)
{
    // libgps reports socket failures as its own negative codes (NL_NOHOST, NL_NOCONNECT, ...), in the
    // return value or in errno, and system failures as a positive errno.
    if (code < -1) return gps_errstr(code);
    if (errno < 0) return gps_errstr(errno);
    if (errno > 0) return strerror(errno);
    return "connection closed by gpsd";
}

cgps_session *cgps_open(const char *host, const char *port, const char **error)
{
    cgps_session *session = calloc(1, sizeof *session);
    if (session == NULL) {
        *error = "out of memory";
        return NULL;
    }
    errno = 0;
    int rc = gps_open(host, port, &session->data);
    if (rc != 0) {
        *error = failure_text(rc);
        free(session);
        return NULL;
    }
    // libgps makes its socket without SOCK_CLOEXEC: set the flag before anything else can run a program.
    int flags = fcntl(session->data.gps_fd, F_GETFD);
    if (flags >= 0) (void)fcntl(session->data.gps_fd, F_SETFD, flags | FD_CLOEXEC);
    if (gps_stream(&session->data, WATCH_ENABLE | WATCH_JSON, NULL) < 0) {
        *error = strerror(errno != 0 ? errno : EIO);
        gps_close(&session->data);
        free(session);
        return NULL;
    }
    return session;
}

int cgps_fd(const cgps_session *session)
{
    return session->data.gps_fd;
}

int cgps_wait(cgps_session *session, int timeout_us)
{
    errno = 0;
    if (gps_waiting(&session->data, timeout_us)) return 1;
    // gps_waiting returns false both on timeout and on error; errno tells them apart.
    return errno != 0 && errno != EINTR && errno != EAGAIN ? -1 : 0;
}

static double finite_or_nan(double value)
{
    return isfinite(value) ? value : NAN;
}

int cgps_read(cgps_session *session, const char **message, const char **error)
{
    errno = 0;
    session->message[0] = '\0';
    int n = gps_read(&session->data, session->message, (int)sizeof session->message);
    if (n < 0) {
        *error = failure_text(n);
        return -1;
    }
    if (n == 0) {
        *error = "connection closed by gpsd";
        return -1;
    }
    *message = session->message;
    return 1;
}

void cgps_last_fix(const cgps_session *session, cgps_fix *fix)
{
    const struct gps_data_t *d = &session->data;
    const struct gps_fix_t *f = &d->fix;
    memset(fix, 0, sizeof *fix);
    fix->time_sec = (int64_t)f->time.tv_sec;
    fix->time_nsec = (int64_t)f->time.tv_nsec;
    fix->mode = f->mode;
    fix->latitude_deg = finite_or_nan(f->latitude);
    fix->longitude_deg = finite_or_nan(f->longitude);
    fix->alt_msl_m = finite_or_nan(f->altMSL);
    fix->alt_hae_m = finite_or_nan(f->altHAE);
    fix->eph_m = finite_or_nan(f->eph);
    fix->epv_m = finite_or_nan(f->epv);
    fix->speed_mps = finite_or_nan(f->speed);
    fix->track_deg = finite_or_nan(f->track);
    fix->climb_mps = finite_or_nan(f->climb);
    fix->satellites_used = d->satellites_used;
}

void cgps_close(cgps_session *session)
{
    if (session == NULL) return;
    gps_close(&session->data);
    free(session);
}
