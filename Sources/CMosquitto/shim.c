#include "cmosquitto.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mosquitto.h>

// libmosquitto is loaded when MQTT is configured (cmosq_library_init), not linked: linked, the dynamic loader
// mapped and relocated it and its TLS libraries (libssl, libcrypto: 1.7 MB resident) in every daemon, also on
// the boards that publish nothing (docs/iio.md, "Memory"). The functions the shim calls, found by dlsym.
#define CMOSQ_FUNCTIONS(X) \
    X(mosquitto_lib_init) X(mosquitto_new) X(mosquitto_destroy) X(mosquitto_connect_callback_set) \
    X(mosquitto_disconnect_callback_set) X(mosquitto_publish_callback_set) X(mosquitto_will_set) \
    X(mosquitto_username_pw_set) X(mosquitto_threaded_set) \
    X(mosquitto_connect_async) X(mosquitto_loop) X(mosquitto_disconnect) X(mosquitto_publish) \
    X(mosquitto_strerror) X(mosquitto_connack_string) X(mosquitto_socket)

#define CMOSQ_POINTER(name) static __typeof__(&name) p_##name;
CMOSQ_FUNCTIONS(CMOSQ_POINTER)

#define CMOSQ_LIBRARY "libmosquitto.so.1"
/// What cmosq_library_init returns when libmosquitto cannot be loaded (not a MOSQ_ERR_ value).
#define CMOSQ_ERR_LIBRARY (-1000)
static char load_failure[512];

struct cmosq_client {
    struct mosquitto *mosq;
    void *context;
    cmosq_connect_callback on_connect;
    cmosq_disconnect_callback on_disconnect;
    cmosq_publish_callback on_publish;
};

static void forward_connect(struct mosquitto *mosq, void *obj, int rc) {
    (void)mosq;
    struct cmosq_client *c = obj;
    c->on_connect(c->context, rc);
}

static void forward_disconnect(struct mosquitto *mosq, void *obj, int rc) {
    (void)mosq;
    struct cmosq_client *c = obj;
    c->on_disconnect(c->context, rc);
}

static void forward_publish(struct mosquitto *mosq, void *obj, int mid) {
    (void)mosq;
    struct cmosq_client *c = obj;
    c->on_publish(c->context, mid);
}

int cmosq_library_init(void) {
    // RTLD_LOCAL: its symbols (and libssl's, libcrypto's) stay out of the global scope.
    void *library = dlopen(CMOSQ_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(load_failure, sizeof load_failure, "cannot load %s: %s", CMOSQ_LIBRARY, dlerror());
        return CMOSQ_ERR_LIBRARY;
    }
#define CMOSQ_RESOLVE(name) \
    if (!(p_##name = (__typeof__(&name))dlsym(library, #name))) { \
        snprintf(load_failure, sizeof load_failure, "%s has no %s (libmosquitto 2.0 or later is needed)", CMOSQ_LIBRARY, #name); \
        return CMOSQ_ERR_LIBRARY; \
    }
    CMOSQ_FUNCTIONS(CMOSQ_RESOLVE)
    return p_mosquitto_lib_init();
}

cmosq_client *cmosq_new(const char *client_id, void *context, cmosq_connect_callback on_connect,
                        cmosq_disconnect_callback on_disconnect, cmosq_publish_callback on_publish) {
    struct cmosq_client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->context = context;
    c->on_connect = on_connect;
    c->on_disconnect = on_disconnect;
    c->on_publish = on_publish;
    c->mosq = p_mosquitto_new ? p_mosquitto_new(client_id, true, c) : NULL;   // NULL: not loaded
    if (!c->mosq) {
        free(c);
        return NULL;
    }
    p_mosquitto_connect_callback_set(c->mosq, forward_connect);
    p_mosquitto_disconnect_callback_set(c->mosq, forward_disconnect);
    p_mosquitto_publish_callback_set(c->mosq, forward_publish);
    return c;
}

void cmosq_destroy(cmosq_client *client) {
    if (!client) return;
    p_mosquitto_destroy(client->mosq);
    free(client);
}

int cmosq_set_will(cmosq_client *client, const char *topic, const char *payload, int qos, bool retain) {
    return p_mosquitto_will_set(client->mosq, topic, (int)strlen(payload), payload, qos, retain);
}

int cmosq_set_credentials(cmosq_client *client, const char *username, const char *password) {
    return p_mosquitto_username_pw_set(client->mosq, username, password);
}

void cmosq_set_threaded(cmosq_client *client) { p_mosquitto_threaded_set(client->mosq, true); }

int cmosq_connect_async(cmosq_client *client, const char *host, int port, int keepalive_seconds, int *error_number) {
    errno = 0;
    int rc = p_mosquitto_connect_async(client->mosq, host, port, keepalive_seconds);
    *error_number = errno;
    return rc;
}

int cmosq_loop(cmosq_client *client, int timeout_ms, int *error_number) {
    errno = 0;
    int rc = p_mosquitto_loop(client->mosq, timeout_ms, 1);
    *error_number = errno;
    return rc;
}

int cmosq_socket(cmosq_client *client) { return p_mosquitto_socket(client->mosq); }

int cmosq_disconnect(cmosq_client *client) { return p_mosquitto_disconnect(client->mosq); }

int cmosq_publish(cmosq_client *client, const char *topic, const void *payload, int length, int qos, bool retain,
                  int *message_id) {
    return p_mosquitto_publish(client->mosq, message_id, topic, length, payload, qos, retain);
}

int cmosq_success(void) { return MOSQ_ERR_SUCCESS; }

const char *cmosq_error_string(int code) {
    if (code == CMOSQ_ERR_LIBRARY) return load_failure;
    if (code == MOSQ_ERR_ERRNO) return strerror(errno);
    return p_mosquitto_strerror ? p_mosquitto_strerror(code) : "libmosquitto is not loaded";
}

const char *cmosq_failure_string(int code, int error_number) {
    if (code == MOSQ_ERR_ERRNO) return strerror(error_number);
    return cmosq_error_string(code);
}

const char *cmosq_connack_string(int code) {
    return p_mosquitto_connack_string ? p_mosquitto_connack_string(code) : "libmosquitto is not loaded";
}
