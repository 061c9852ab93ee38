#include "cmosquitto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <mosquitto.h>

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

int cmosq_library_init(void) { return mosquitto_lib_init(); }

cmosq_client *cmosq_new(const char *client_id, void *context, cmosq_connect_callback on_connect,
                        cmosq_disconnect_callback on_disconnect, cmosq_publish_callback on_publish) {
    struct cmosq_client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->context = context;
    c->on_connect = on_connect;
    c->on_disconnect = on_disconnect;
    c->on_publish = on_publish;
    c->mosq = mosquitto_new(client_id, true, c);
    if (!c->mosq) {
        free(c);
        return NULL;
    }
    mosquitto_connect_callback_set(c->mosq, forward_connect);
    mosquitto_disconnect_callback_set(c->mosq, forward_disconnect);
    mosquitto_publish_callback_set(c->mosq, forward_publish);
    return c;
}

void cmosq_destroy(cmosq_client *client) {
    if (!client) return;
    mosquitto_destroy(client->mosq);
    free(client);
}

int cmosq_set_will(cmosq_client *client, const char *topic, const char *payload, int qos, bool retain) {
    return mosquitto_will_set(client->mosq, topic, (int)strlen(payload), payload, qos, retain);
}

int cmosq_set_credentials(cmosq_client *client, const char *username, const char *password) {
    return mosquitto_username_pw_set(client->mosq, username, password);
}

int cmosq_set_tls(cmosq_client *client, const char *ca_file, const char *cert_file, const char *key_file) {
    if (!ca_file) {
        int rc = mosquitto_int_option(client->mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
        if (rc != MOSQ_ERR_SUCCESS) return rc;
    }
    return mosquitto_tls_set(client->mosq, ca_file, NULL, cert_file, key_file, NULL);
}

void cmosq_set_threaded(cmosq_client *client) { mosquitto_threaded_set(client->mosq, true); }

int cmosq_connect_async(cmosq_client *client, const char *host, int port, int keepalive_seconds, int *error_number) {
    errno = 0;
    int rc = mosquitto_connect_async(client->mosq, host, port, keepalive_seconds);
    *error_number = errno;
    return rc;
}

int cmosq_loop(cmosq_client *client, int timeout_ms, int *error_number) {
    errno = 0;
    int rc = mosquitto_loop(client->mosq, timeout_ms, 1);
    *error_number = errno;
    return rc;
}

int cmosq_disconnect(cmosq_client *client) { return mosquitto_disconnect(client->mosq); }

int cmosq_publish(cmosq_client *client, const char *topic, const void *payload, int length, int qos, bool retain,
                  int *message_id) {
    return mosquitto_publish(client->mosq, message_id, topic, length, payload, qos, retain);
}

int cmosq_success(void) { return MOSQ_ERR_SUCCESS; }

const char *cmosq_error_string(int code) {
    if (code == MOSQ_ERR_ERRNO) return strerror(errno);
    return mosquitto_strerror(code);
}

const char *cmosq_failure_string(int code, int error_number) {
    if (code == MOSQ_ERR_ERRNO) return strerror(error_number);
    return mosquitto_strerror(code);
}

const char *cmosq_connack_string(int code) { return mosquitto_connack_string(code); }
