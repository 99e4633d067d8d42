// Sends a plan of calls to the relay with analytics-kotlin's core (the JVM artifact of
// Segment's Kotlin SDK, no Android):
//
//   java -cp ... SendKt CDN_HOST PLAN.tsv       (CDN_HOST: "127.0.0.1:PORT/v1", the relay)
//
// PLAN.tsv: "label<TAB>write key<TAB>call as JSON" a line, one write key a run (two
// Analytics instances in one JVM trip over each other's start-up). The SDK reads its settings
// from the relay (GET CDN_HOST/projects/{writeKey}/settings), as an app configured with the
// relay as its cdnHost does, and only those settings' apiHost brings its events to the relay:
// the configured apiHost is a dead port. The SDK's own RequestFactory builds https:// URLs;
// ours differs only in the scheme (the relay here speaks plain HTTP). The SDK sends as it
// always does: POST /v1/b, gzip, text/plain, the write key in the body.
// Prints {"label","messageId"} a call (the SDK's own messageId), then "done".
import com.segment.analytics.kotlin.core.Analytics
import com.segment.analytics.kotlin.core.BaseEvent
import com.segment.analytics.kotlin.core.Configuration
import com.segment.analytics.kotlin.core.RequestFactory
import com.segment.analytics.kotlin.core.Telemetry
import com.segment.analytics.kotlin.core.checkSettings
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.jsonObject
import kotlinx.serialization.json.jsonPrimitive
import kotlinx.serialization.json.put
import java.io.File
import java.io.IOException
import java.net.HttpURLConnection
import java.util.concurrent.ConcurrentHashMap

class RelayRequests : RequestFactory() {
    override fun settings(cdnHost: String, writeKey: String): HttpURLConnection {
        val connection = openConnection("http://$cdnHost/projects/$writeKey/settings")
        if (connection.responseCode != HttpURLConnection.HTTP_OK) {
            throw IOException("settings: HTTP ${connection.responseCode}")
        }
        return connection
    }

    override fun upload(apiHost: String): HttpURLConnection {
        val connection = openConnection("http://$apiHost/b")
        connection.setRequestProperty("Content-Type", "text/plain")
        connection.doOutput = true
        connection.setChunkedStreamingMode(0)
        return connection
    }
}

fun main(args: Array<String>) {
    Telemetry.enable = false // the SDK's own metrics would go to Segment's servers
    val cdnHost = args[0]
    val lines = File(args[1]).readLines().filter { it.isNotBlank() }.map { it.split('\t', limit = 3) }
    val ids = ConcurrentHashMap<String, String>()
    val clients = HashMap<String, Analytics>()
    for ((label, key, json) in lines) {
        val analytics = clients.getOrPut(key) {
            File("/tmp/analytics-kotlin/$key").deleteRecursively() // no events of an earlier run
            Analytics(Configuration(
                writeKey = key,
                application = "outbound-relay-tests",
                flushAt = 100,
                flushInterval = 1,
                cdnHost = cdnHost,
                apiHost = "127.0.0.1:9/v1",
                requestFactory = RelayRequests(),
            )).also { a ->
                // Calls made before the SDK has loaded its user state are lost ("lateinit
                // property anonymousId has not been initialized"): an app starts it first.
                val ready = System.currentTimeMillis() + 15_000
                while (System.currentTimeMillis() < ready &&
                    runCatching { a.anonymousId() }.getOrNull().isNullOrEmpty()) Thread.sleep(20)
            }
        }
        val msg = Json.parseToJsonElement(json).jsonObject
        fun str(k: String) = msg[k]?.jsonPrimitive?.content ?: ""
        fun obj(k: String) = msg[k]?.jsonObject ?: JsonObject(emptyMap())
        val enrich: (BaseEvent?) -> BaseEvent? = { e ->
            if (e != null) {
                msg["integrations"]?.let { e.integrations = it.jsonObject }
                // The SDK takes the user from its identify; a call for another user says so.
                if (str("type") != "alias" && str("userId") != "") e.userId = str("userId")
                ids[label] = e.messageId
            }
            e
        }
        when (str("type")) {
            "identify" -> analytics.identify(str("userId"), obj("traits"), enrich)
            "track" -> analytics.track(str("event"), obj("properties"), enrich)
            "screen" -> analytics.screen(str("name"), obj("properties"), "", enrich)
            "group" -> analytics.group(str("groupId"), obj("traits"), enrich)
            "alias" -> analytics.alias(str("userId"), enrich)
            else -> throw IllegalArgumentException("no ${str("type")} in analytics-kotlin")
        }
    }
    val deadline = System.currentTimeMillis() + 60_000 // settings first, then the calls; a loaded machine is slow
    var recheck = System.currentTimeMillis() + 10_000
    while (ids.size < lines.size && System.currentTimeMillis() < deadline) {
        if (System.currentTimeMillis() > recheck) {
            // The SDK's StartupQueue holds calls until a "running" update reaches it, and the
            // store hands its settings check's "paused" and "running" updates to a thread pool:
            // when they arrive in the wrong order, the queue stays shut until the next settings
            // check (an Android app makes one at every foreground). Every call stuck at once
            // failed CI this way. Check again, as the app would; the relay answers it as before.
            System.err.println("${lines.size - ids.size} calls still held by the SDK after 10 s: settings checked again")
            clients.values.forEach { runBlocking { it.checkSettings() } }
            recheck = System.currentTimeMillis() + 10_000
        }
        Thread.sleep(50)
    }
    clients.values.forEach { it.flush() }
    Thread.sleep(3_000) // the SDK has no "delivered" callback: the test counts at the receivers
    for ((label, _, _) in lines) {
        println(buildJsonObject { put("label", label); put("messageId", ids[label]) })
    }
    println(if (ids.size == lines.size) "done" else "missing ids")
    System.exit(0)
}
