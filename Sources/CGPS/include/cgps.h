// Thin shim over libgps: hides the API differences between libgps releases. No logic here.
#ifndef CGPS_H
#define CGPS_H

#include <gps.h>

/// The libgps API this shim was compiled against (GPSD_API_MAJOR_VERSION.MINOR).
void cgps_api_version(int *major, int *minor);

#endif
