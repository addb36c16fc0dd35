"""Crews and flows of the CrewAI tests, on the offline model."""

from __future__ import annotations

from crewai.flow import ConversationConfig, Flow, start
from crewai.flow.conversational import ConversationState
from crewai.tools import tool
from offline_crewai import OfflineCrewLLM
from opentelemetry import trace

from crewai import Agent, Crew, Process, Task

CONV, EXEC = "gen_ai.conversation.id", "agent_identity.execution.id"
DELEG, PARENT_EXEC = "agent_identity.delegation.id", "agent_identity.parent.execution.id"
RESUMED, SOURCE = "agent_identity.conversation.resumed", "agent_identity.conversation.source"
TRACER = trace.get_tracer("app")


@tool("get_weather")
def get_weather(city: str) -> str:
    """The weather in a city."""
    with TRACER.start_as_current_span("tool-body"):
        return f"sunny in {city}"


def forecaster(**kwargs) -> Agent:
    return Agent(role="Forecaster", goal="forecast", backstory="b", llm=OfflineCrewLLM(), tools=[get_weather], **kwargs)


def weather_crew(name: str = "weather", **kwargs) -> Crew:
    agent = forecaster()
    task = Task(description="weather in Paris?", expected_output="text", agent=agent, **kwargs)
    return Crew(name=name, agents=[agent], tasks=[task])


def delegating_crew() -> Crew:
    """A lead that delegates its task to the forecaster (CrewAI's delegate-work tool)."""
    lead = Agent(
        role="Lead", goal="answer", backstory="b", llm=OfflineCrewLLM(delegate_to="Forecaster"), allow_delegation=True
    )
    task = Task(description="weather?", expected_output="text", agent=lead)
    return Crew(name="delegating", agents=[lead, forecaster()], tasks=[task])


def hierarchical_crew() -> Crew:
    """A hierarchical crew: CrewAI's manager agent delegates the task to the forecaster."""
    task = Task(description="weather in Paris?", expected_output="text")
    return Crew(
        name="managed",
        agents=[forecaster()],
        tasks=[task],
        process=Process.hierarchical,
        manager_llm=OfflineCrewLLM(delegate_to="Forecaster"),
    )


@ConversationConfig(llm=OfflineCrewLLM())
class Chat(Flow[ConversationState]):
    """A conversational flow without persistence: its messages live in the instance."""


class Pipeline(Flow):
    """A plain (not conversational) flow that kicks off a crew."""

    @start()
    def forecast(self):
        return weather_crew("inner").kickoff().raw


def spans_of(exporter, execution_id):
    return [s for s in exporter.get_finished_spans() if s.attributes.get(EXEC) == execution_id]


def agent_spans(exporter, name=None):
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith(("invoke_agent ", "invoke_workflow "))]
    return [s for s in spans if name is None or s.name == name]
