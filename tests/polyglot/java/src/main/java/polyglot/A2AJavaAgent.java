// SPDX-License-Identifier: Apache-2.0
package polyglot;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.a2a.server.ServerCallContext;
import io.a2a.server.agentexecution.AgentExecutor;
import io.a2a.server.agentexecution.RequestContext;
import io.a2a.server.auth.UnauthenticatedUser;
import io.a2a.server.events.EventQueue;
import io.a2a.server.events.InMemoryQueueManager;
import io.a2a.server.requesthandlers.DefaultRequestHandler;
import io.a2a.server.tasks.BasePushNotificationSender;
import io.a2a.server.tasks.InMemoryPushNotificationConfigStore;
import io.a2a.server.tasks.InMemoryTaskStore;
import io.a2a.spec.AgentCapabilities;
import io.a2a.spec.AgentCard;
import io.a2a.spec.AgentSkill;
import io.a2a.spec.InternalError;
import io.a2a.spec.JSONRPCErrorResponse;
import io.a2a.spec.Message;
import io.a2a.spec.MethodNotFoundError;
import io.a2a.spec.SendMessageRequest;
import io.a2a.spec.SendStreamingMessageRequest;
import io.a2a.spec.SendStreamingMessageResponse;
import io.a2a.spec.TextPart;
import io.a2a.spec.UnsupportedOperationError;
import io.a2a.transport.jsonrpc.handler.JSONRPCHandler;
import io.a2a.util.Utils;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Scope;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * a2a-java agents for tests/polyglot, one JDK HTTP server each, in one JVM under the OpenTelemetry
 * Java agent. Each agent's "model" reports how many messages of the conversation it saw: {@code
 * keeps} keeps each contextId's history, {@code forgets} starts from nothing every request (still
 * answering in the requested context), {@code moves} answers in a new context. Each request appends
 * {"agent", "trace_id", "messages"} to AGENT_TRUTH (the ground truth the test reads). {@code
 * +resumed}: the agent follows the {@code resumed} contract of docs/attributes.md (an invoke_agent
 * span of its own with gen_ai.conversation.id and agent_identity.conversation.resumed).
 *
 * <pre>java -javaagent:target/otel/opentelemetry-javaagent.jar -cp ... polyglot.A2AJavaAgent --agent keeps=9401 ...</pre>
 */
public final class A2AJavaAgent {
    private static final Tracer TRACER = GlobalOpenTelemetry.getTracer("polyglot-java-agent");
    private static final String TRUTH = System.getenv("AGENT_TRUTH");

    private A2AJavaAgent() {}

    public static void main(String[] args) throws IOException {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals("--agent")) {
                String[] spec = args[i + 1].split("=");
                serve(spec[0], Integer.parseInt(spec[1]));
            }
        }
    }

    private static void serve(String spec, int port) throws IOException {
        String mode = spec.split("\\+")[0];
        boolean declareResumed = spec.endsWith("+resumed");
        String name = "java-" + spec.replace('+', '-');
        Map<String, List<String>> histories = new ConcurrentHashMap<>();
        AgentExecutor executor = new AgentExecutor() {
            @Override
            public void execute(RequestContext ctx, EventQueue queue) {
                if (!declareResumed) {
                    turn(name, mode, histories, ctx, queue);
                    return;
                }
                // The resumed contract: an invoke_agent span naming the context answered in and
                // whether the run started from prior state.
                Span span = TRACER.spanBuilder("invoke_agent " + name).startSpan();
                try (Scope ignored = span.makeCurrent()) {
                    span.setAttribute("gen_ai.operation.name", "invoke_agent");
                    span.setAttribute("gen_ai.agent.name", name);
                    span.setAttribute("gen_ai.conversation.id", ctx.getContextId());
                    span.setAttribute("agent_identity.conversation.resumed", turn(name, mode, histories, ctx, queue));
                } finally {
                    span.end();
                }
            }

            @Override
            public void cancel(RequestContext ctx, EventQueue queue) {
                throw new UnsupportedOperationError();
            }
        };
        ExecutorService pool = Executors.newCachedThreadPool();
        InMemoryTaskStore tasks = new InMemoryTaskStore();
        InMemoryPushNotificationConfigStore push = new InMemoryPushNotificationConfigStore();
        DefaultRequestHandler handler = DefaultRequestHandler.create(
                executor, tasks, new InMemoryQueueManager(tasks), push, new BasePushNotificationSender(push), pool);
        JSONRPCHandler rpc = new JSONRPCHandler(card(name, mode, port), handler, pool);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 0);
        server.createContext("/.well-known/agent-card.json", ex -> reply(ex, Utils.OBJECT_MAPPER.writeValueAsString(rpc.getAgentCard())));
        server.createContext("/", ex -> jsonRpc(rpc, ex));
        server.setExecutor(pool);
        server.start();
        System.out.println(name + " listening on " + port);
    }

    /** The agent's turn: enqueues its reply, returns whether it started from prior history. */
    private static boolean turn(String name, String mode, Map<String, List<String>> histories, RequestContext ctx, EventQueue queue) {
        String text = ctx.getMessage().getParts().stream()
                .filter(p -> p instanceof TextPart).map(p -> ((TextPart) p).getText()).collect(Collectors.joining(" "));
        List<String> prior = mode.equals("keeps") ? histories.getOrDefault(ctx.getContextId(), List.of()) : List.of();
        List<String> seen = new ArrayList<>(prior);
        seen.add(text);
        if (mode.equals("keeps")) {
            histories.put(ctx.getContextId(), seen);
        }
        record(name, Span.current().getSpanContext().getTraceId(), seen.size());
        queue.enqueueEvent(new Message.Builder()
                .role(Message.Role.AGENT)
                .messageId(UUID.randomUUID().toString())
                .contextId(mode.equals("moves") ? UUID.randomUUID().toString() : ctx.getContextId())
                .parts(new TextPart(name + " saw " + seen.size() + " message(s)"))
                .build());
        return !prior.isEmpty();
    }

    private static synchronized void record(String name, String traceId, int messages) {
        if (TRUTH == null) {
            return;
        }
        String line = "{\"agent\": \"" + name + "\", \"trace_id\": \"" + traceId + "\", \"messages\": " + messages + "}\n";
        try {
            Files.writeString(Path.of(TRUTH), line, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** One JSON-RPC request: message/send, or message/stream answered as server-sent events. */
    private static void jsonRpc(JSONRPCHandler rpc, HttpExchange ex) throws IOException {
        String body = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        try {
            JsonNode node = Utils.OBJECT_MAPPER.readTree(body);
            String method = node.path("method").asText();
            ServerCallContext context = new ServerCallContext(UnauthenticatedUser.INSTANCE, new HashMap<>(), new HashSet<>());
            if (SendMessageRequest.METHOD.equals(method)) {
                SendMessageRequest request = Utils.OBJECT_MAPPER.treeToValue(node, SendMessageRequest.class);
                reply(ex, Utils.OBJECT_MAPPER.writeValueAsString(rpc.onMessageSend(request, context)));
            } else if (SendStreamingMessageRequest.METHOD.equals(method)) {
                SendStreamingMessageRequest request = Utils.OBJECT_MAPPER.treeToValue(node, SendStreamingMessageRequest.class);
                stream(ex, rpc.onMessageSendStream(request, context));
            } else {
                reply(ex, Utils.OBJECT_MAPPER.writeValueAsString(new JSONRPCErrorResponse(node.path("id").asText(null), new MethodNotFoundError())));
            }
        } catch (RuntimeException e) {
            reply(ex, Utils.OBJECT_MAPPER.writeValueAsString(new JSONRPCErrorResponse(new InternalError(e.getMessage()))));
        }
    }

    /** Writes each streamed response as a server-sent event, until the stream completes. */
    private static void stream(HttpExchange ex, Flow.Publisher<SendStreamingMessageResponse> events) throws IOException {
        ex.getResponseHeaders().add("Content-Type", "text/event-stream");
        ex.sendResponseHeaders(200, 0);
        OutputStream out = ex.getResponseBody();
        CompletableFuture<Void> done = new CompletableFuture<>();
        events.subscribe(new Flow.Subscriber<>() {
            @Override
            public void onSubscribe(Flow.Subscription subscription) {
                subscription.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(SendStreamingMessageResponse item) {
                try {
                    out.write(("data: " + Utils.OBJECT_MAPPER.writeValueAsString(item) + "\n\n").getBytes(StandardCharsets.UTF_8));
                    out.flush();
                } catch (IOException e) {
                    done.completeExceptionally(e);
                }
            }

            @Override
            public void onError(Throwable error) {
                done.completeExceptionally(error);
            }

            @Override
            public void onComplete() {
                done.complete(null);
            }
        });
        try {
            done.get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            System.err.println("stream ended: " + e);
        } finally {
            ex.close();
        }
    }

    private static void reply(HttpExchange ex, String json) throws IOException {
        byte[] out = json.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", "application/json");
        ex.sendResponseHeaders(200, out.length);
        ex.getResponseBody().write(out);
        ex.close();
    }

    private static AgentCard card(String name, String mode, int port) {
        return new AgentCard.Builder()
                .name(name)
                .description("An a2a-java agent that " + mode + " its conversations")
                .url("http://127.0.0.1:" + port + "/")
                .version("1.0.0")
                .capabilities(new AgentCapabilities.Builder().streaming(true).pushNotifications(false).build())
                .defaultInputModes(List.of("text"))
                .defaultOutputModes(List.of("text"))
                .skills(List.of(new AgentSkill.Builder().id("chat").name("chat")
                        .description("counts the messages it saw").tags(List.of("test")).build()))
                .preferredTransport("JSONRPC")
                .protocolVersion("0.3.0")
                .build();
    }
}
