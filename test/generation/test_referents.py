"""What an instruction's phrases name, as the reader grounds them for module III's prompt.

Checked against LIBERO's goals, not our own output: each task's `(:goal ...)` in
Lifelong-Robot-Learning/LIBERO, libero/libero/bddl_files/<suite>/<task>.bddl (here as
`mango bddl import` wrote the 130 tasks for the recorded local-model run, `goal_atoms`)
says which object goes on or in what; the reader's phrases must name that object and that
place for the task's instruction.
"""

from __future__ import annotations

from mango.generation.offline.grounding import ground_instruction

# where LIBERO's words and its goal disagree
KNOWN = {
    # the file is "..._stack_the_middle_black_bowl_on_the_back_black_bowl", its language
    # says "on the black bowl at the front"; the reader follows the language
    ("KITCHEN_SCENE2_stack_the_middle_black_bowl_on_the_back_black_bowl",
     "on(akita_black_bowl_2, akita_black_bowl_3)"),
    # "to the right compartment of the caddy": the goal is the table beside the caddy
    ("STUDY_SCENE3_pick_up_the_red_mug_and_place_it_to_the_right_of_the_caddy",
     "on(red_coffee_mug_1, study_table_desk_caddy_right_region)"),
    ("STUDY_SCENE3_pick_up_the_white_mug_and_place_it_to_the_right_of_the_caddy",
     "on(porcelain_mug_1, study_table_desk_caddy_right_region)"),
}


def test_the_phrases_name_the_object_and_the_place_of_every_libero_goal_atom(
        imported_libero) -> None:
    agree, differ = 0, set()
    for task in imported_libero.values():
        phrases = ground_instruction(task.scene.id, task.scene).phrases
        things = {i for v in phrases.values() if " " not in v.split(", ")[0]
                  for i in v.split(", ")}
        for atom in task.goal_atoms:
            if not atom.startswith(("on(", "in(")):
                continue
            thing, place = (s.strip() for s in atom[3:-1].split(","))
            if thing in things and f"{atom[:2]} {place}" in phrases.values():
                agree += 1
            else:
                differ.add((task.stem, atom))
    assert differ <= KNOWN, differ - KNOWN
    assert agree >= 121


def test_a_thing_a_place_and_a_pronoun(imported_libero) -> None:
    scene = imported_libero["KITCHEN_SCENE1_open_the_top_drawer_of_the_cabinet_and_put_the_"
                            "bowl_in_it"].scene
    phrases = ground_instruction(
        "open the top drawer of the cabinet and put the bowl in it", scene).phrases
    assert phrases == {"the top drawer of the cabinet": "wooden_cabinet_1_top_region",
                       "the bowl": "akita_black_bowl_1",
                       "in it": "in wooden_cabinet_1_top_region"}
    # a pronoun is named with its clause: LIBERO's goal for "... and place them in the tray"
    # (LIVING_ROOM_SCENE4) puts the stack's lower bowl in the tray
    task = imported_libero["LIVING_ROOM_SCENE4_stack_the_right_bowl_on_the_left_bowl_and_"
                           "place_them_in_the_tray"]
    phrases = ground_instruction(task.scene.id, task.scene).phrases
    assert phrases["them (in 'place them in the tray')"] == "akita_black_bowl_1"
    assert "in(akita_black_bowl_1, wooden_tray_1_contain_region)" in task.goal_atoms
    # two "it"s of one instruction are two entries
    phrases = ground_instruction("pick up the bowl and place it on the plate, then open the "
                                 "top drawer of the cabinet and close it", scene).phrases
    assert sum(k.startswith("it (in ") for k in phrases) == 2, phrases
    # what the reader cannot read names nothing
    assert ground_instruction("juggle the bowl", scene).phrases == {}
