// Thin shim over libgps (API 9 or later, shim.c): flat structs for Swift. No logic here.
#ifndef CGPS_H
#define CGPS_H

#include <stdbool.h>
#include <stdint.h>

/// One TPV report from gpsd, flattened. Doubles are NaN when gpsd did not send the field.
typedef struct cgps_fix {
    int64_t time_sec;        // fix time, Unix seconds (0: gpsd sent no time)
    int64_t time_nsec;
    int mode;                // 0 not seen, 1 no fix, 2 2D, 3 3D (gpsd's MODE_*)
    double latitude_deg;
    double longitude_deg;
    double alt_msl_m;        // altMSL
    double alt_hae_m;        // altHAE
    double eph_m;
    double epv_m;
    double speed_mps;
    double track_deg;
    double climb_mps;
    int satellites_used;     // from the last SKY gpsd sent (TPV does not carry it in 3.22)
} cgps_fix;

/// An open connection to gpsd; opaque to Swift.
typedef struct cgps_session cgps_session;

/// Connects to gpsd at host:port and asks for JSON reports (WATCH_ENABLE|WATCH_JSON).
/// Returns NULL on failure and sets *error to gpsd's text for the failure (static storage).
cgps_session *cgps_open(const char *host, const char *port, const char **error);

/// Waits up to timeout_us for data. Returns 1 when data is ready, 0 on timeout, -1 when the link failed.
int cgps_wait(cgps_session *session, int timeout_us);

/// Reads one report. Returns 1 and points *message at the report's JSON (valid until the next read),
/// -1 when the connection failed or closed (then *error says why).
int cgps_read(cgps_session *session, const char **message, const char **error);

/// The fix as libgps holds it after the last report read (meaningful after a TPV).
void cgps_last_fix(const cgps_session *session, cgps_fix *fix);

/// The connection's socket, for shutdown(2) from another thread to end a wait early.
int cgps_fd(const cgps_session *session);

void cgps_close(cgps_session *session);

#endif
