#include "cgps.h"

void cgps_api_version(int *major, int *minor)
{
    *major = GPSD_API_MAJOR_VERSION;
    *minor = GPSD_API_MINOR_VERSION;
}
