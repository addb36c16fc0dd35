// SPDX-License-Identifier: Apache-2.0
// The Node OpenTelemetry SDK, loaded with `node --require ./otel.cjs` before the app: HTTP and
// Express instrumentation (the HTTP SERVER span continues the caller's traceparent), OTLP/HTTP
// protobuf to OTEL_EXPORTER_OTLP_ENDPOINT, service.name from OTEL_SERVICE_NAME. @a2a-js/sdk has no
// OpenTelemetry of its own: these spans are all the agent's telemetry, plus what agent.cjs adds.
const { NodeSDK } = require('@opentelemetry/sdk-node');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { ExpressInstrumentation } = require('@opentelemetry/instrumentation-express');

const sdk = new NodeSDK({
  traceExporter: new OTLPTraceExporter(),
  instrumentations: [new HttpInstrumentation(), new ExpressInstrumentation()],
});
sdk.start();

// Flush on SIGTERM (the test harness stops the agent with it).
process.on('SIGTERM', () => {
  sdk.shutdown().finally(() => process.exit(0));
});
