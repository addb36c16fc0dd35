// SPDX-License-Identifier: Apache-2.0
// @a2a-js/sdk agents (A2A v1.0, JSON-RPC over Express) for tests/polyglot, one Express app per agent,
// in one Node process. Each agent's "model" reports how many messages of the conversation it saw:
// `keeps` keeps each contextId's history, `forgets` starts from nothing every request (still
// answering in the requested context), `moves` answers every request in a new context. Each
// request appends {"agent", "trace_id", "messages"} to AGENT_TRUTH (the ground truth the test reads).
//
//   node --require ./otel.cjs agent.cjs --agent keeps=9301 --agent forgets+resumed=9302 ...
//
// `+resumed`: the agent follows the `resumed` contract of docs/attributes.md with a few lines of
// its own OpenTelemetry code (an invoke_agent span with gen_ai.conversation.id and
// agent_identity.conversation.resumed); without it the collector sees its HTTP spans only.
const fs = require('node:fs');
const { randomUUID } = require('node:crypto');
const express = require('express');
const { trace } = require('@opentelemetry/api');
const { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } = require('@a2a-js/sdk/server');
const { jsonRpcHandler, agentCardHandler, UserBuilder } = require('@a2a-js/sdk/server/express');

const truthFile = process.env.AGENT_TRUTH;
const tracer = trace.getTracer('polyglot-js-agent');
const ROLE_AGENT = 2; // a2a.v1 Role.ROLE_AGENT

function text(message) {
  return (message.parts || []).map((p) => (p.content && p.content.$case === 'text' ? p.content.value : '')).join(' ');
}

// The agent's turn: publishes its reply, returns whether it started from prior history.
function serve(agent, ctx, bus) {
  const prior = agent.mode === 'keeps' ? agent.histories.get(ctx.contextId) || [] : [];
  const seen = [...prior, text(ctx.userMessage)];
  if (agent.mode === 'keeps') agent.histories.set(ctx.contextId, seen);
  const active = trace.getActiveSpan();
  const traceId = active ? active.spanContext().traceId : '';
  if (truthFile) fs.appendFileSync(truthFile, JSON.stringify({ agent: agent.name, trace_id: traceId, messages: seen.length }) + '\n');
  bus.publish(AgentEvent.message({
    messageId: randomUUID(),
    contextId: agent.mode === 'moves' ? randomUUID() : ctx.contextId,
    taskId: '',
    role: ROLE_AGENT,
    parts: [{ content: { $case: 'text', value: `${agent.name} saw ${seen.length} message(s)` } }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  }));
  bus.finished();
  return prior.length > 0;
}

function executor(agent) {
  return {
    async execute(ctx, bus) {
      if (!agent.declareResumed) {
        serve(agent, ctx, bus);
        return;
      }
      // The resumed contract: an invoke_agent span naming the context answered in and whether
      // the run started from prior state.
      await tracer.startActiveSpan(`invoke_agent ${agent.name}`, async (span) => {
        span.setAttribute('gen_ai.operation.name', 'invoke_agent');
        span.setAttribute('gen_ai.agent.name', agent.name);
        span.setAttribute('gen_ai.conversation.id', ctx.contextId);
        span.setAttribute('agent_identity.conversation.resumed', serve(agent, ctx, bus));
        span.end();
      });
    },
    async cancelTask() {},
  };
}

function card(agent) {
  return {
    name: agent.name,
    description: `A @a2a-js/sdk agent that ${agent.mode} its conversations`,
    supportedInterfaces: [{ url: `http://127.0.0.1:${agent.port}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'chat', name: 'chat', description: 'counts the messages it saw', tags: ['test'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
}

const args = process.argv.slice(2);
args.forEach((arg, i) => {
  if (arg !== '--agent') return;
  const [spec, port] = args[i + 1].split('=');
  const [mode, flag] = spec.split('+');
  const agent = { name: `js-${spec.replace('+', '-')}`, mode, declareResumed: flag === 'resumed', port: Number(port), histories: new Map() };
  const handler = new DefaultRequestHandler(card(agent), new InMemoryTaskStore(), executor(agent));
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.listen(agent.port, '127.0.0.1', () => console.log(`${agent.name} listening on ${agent.port}`));
});
